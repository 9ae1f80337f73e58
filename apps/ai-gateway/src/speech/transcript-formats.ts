// The subtitle and text shapes of OpenAI's /audio/transcriptions `response_format`, made from segments
// with start and end times (the local engine's utterances).

export interface TimedSegment {
  text: string;
  start: number;
  end: number;
}

/** `00:00:01,500` (SRT) or `00:00:01.500` (WebVTT) from seconds. */
export function subtitleTime(seconds: number, separator: ',' | '.'): string {
  const ms = Math.max(0, Math.round(seconds * 1000));
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = Math.floor((ms % 60_000) / 1000);
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${pad(h)}:${pad(m)}:${pad(s)}${separator}${pad(ms % 1000, 3)}`;
}

/** Caption text on one line: a newline or a blank line inside would end the cue early. */
function cueText(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

export function toSrt(segments: TimedSegment[]): string {
  return segments
    .map((s, i) => `${i + 1}\n${subtitleTime(s.start, ',')} --> ${subtitleTime(s.end, ',')}\n${cueText(s.text)}\n`)
    .join('\n');
}

export function toVtt(segments: TimedSegment[]): string {
  return `WEBVTT\n\n${segments.map((s) => `${subtitleTime(s.start, '.')} --> ${subtitleTime(s.end, '.')}\n${cueText(s.text)}\n`).join('\n')}`;
}

/** One segment of OpenAI's verbose_json transcript: Whisper's decoding fields are all required there. */
export interface VerboseSegment extends TimedSegment {
  id: number;
  seek: number;
  tokens: number[];
  temperature: number;
  avg_logprob: number;
  compression_ratio: number;
  no_speech_prob: number;
}

/**
 * verbose_json segments from the local engine's utterances. Clients typed on OpenAI's reference (it
 * requires every field) read them, so the fields PocketSphinx has no value for are neutral: no Whisper
 * token ids, greedy decoding (temperature 0), nothing flagged as failed or silent (avg_logprob 0,
 * compression_ratio 1, no_speech_prob 0: each segment is an utterance the engine heard). `seek` is the
 * start in Whisper's 10 ms frames.
 */
export function toVerboseSegments(segments: TimedSegment[]): VerboseSegment[] {
  return segments.map((s, id) => ({
    id,
    seek: Math.round(s.start * 100),
    start: s.start,
    end: s.end,
    text: s.text,
    tokens: [],
    temperature: 0,
    avg_logprob: 0,
    compression_ratio: 1,
    no_speech_prob: 0,
  }));
}
