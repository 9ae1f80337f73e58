import { imageGenerationCost, recognitionCost, synthesisCost, transcriptionCost } from './media-prices';

describe('media prices', () => {
  it('charges each recognition feature once at its contract price', () => {
    expect(recognitionCost(['labels'])).toBe(0.01);
    expect(recognitionCost(['objects'])).toBe(0.02);
    expect(recognitionCost(['text'])).toBe(0.01);
    expect(recognitionCost(['labels', 'objects', 'text', 'faces', 'text'])).toBe(0.05);
  });

  it('prices generation per image by size', () => {
    expect(imageGenerationCost('1024x1024', 1)).toBe(0.1);
    expect(imageGenerationCost('1024x1024', 4)).toBe(0.4);
    expect(imageGenerationCost('1792x1024', 1)).toBe(0.175);
    expect(imageGenerationCost('256x256', 2)).toBe(0.05);
  });

  it('prices speech by measured seconds and characters', () => {
    expect(transcriptionCost(60)).toBe(0.02);
    expect(transcriptionCost(30.2)).toBeCloseTo((31 / 60) * 0.02, 10);
    expect(transcriptionCost(120, true)).toBe(0.06);
    expect(synthesisCost(1000)).toBe(0.01);
    expect(synthesisCost(5000)).toBe(0.05);
  });
});
