import { CallAbortedError } from '@app/llm';
import { FairTurns, Tokenizer } from './tokenizer';

/** Lets the event loop run one turn: whatever FairTurns let go on in it has run when this resolves. */
const oneTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('FairTurns', () => {
  it('lets one waiting count of each key go on per turn of the event loop, in the order they asked', async () => {
    const turns = new FairTurns();
    const ran: string[] = [];
    const wait = (key: string, name: string) => turns.next(key).then(() => void ran.push(name));
    const all = Promise.all([wait('a', 'a1'), wait('a', 'a2'), wait('a', 'a3'), wait('b', 'b1')]);
    await oneTurn();
    expect(ran).toEqual(['a1', 'b1']);
    await oneTurn();
    expect(ran).toEqual(['a1', 'b1', 'a2']);
    await oneTurn();
    expect(ran).toEqual(['a1', 'b1', 'a2', 'a3']);
    await all;
  });

  it("shares a key's turns between its requests' counts: two large counts of one key take turns, another key's goes on each turn", async () => {
    const tokenizer = new Tokenizer();
    const text = 'word '.repeat(20_000); // 100 000 characters: several slices each
    const progress: string[] = [];
    const count = async (key: string, name: string) => {
      const pace = tokenizer.pace(key);
      await pace.spend(0);
      for (let i = 0; i < 8; i++) {
        await pace.spend(20_000);
        progress.push(name);
      }
      return tokenizer.countUpToAsync(text, 'cl100k_base', Infinity, pace);
    };
    const done = Promise.all([count('a', 'a1'), count('a', 'a2'), count('b', 'b1')]);
    // Each spend past the slice waits for a turn: in each turn key a moves one of its two counts and key b
    // its one, so both keys progress alike: one step apart, the second count of a having taken its first step
    // before any wait (a turn for each of a's counts, as plain setImmediate gives, moves a twice as far: 6 to 3).
    for (let turn = 0; turn < 3; turn++) await oneTurn();
    const a = progress.filter((p) => p.startsWith('a')).length;
    const b = progress.filter((p) => p === 'b1').length;
    expect({ a, b }).toEqual({ a: 4, b: 3 });
    const [a1, a2, b1] = await done;
    expect(a1).toBe(a2);
    expect(b1).toBe(a1);
  });

  it('stops the count of a request whose client left at its next turn', async () => {
    const tokenizer = new Tokenizer();
    const clientGone = { aborted: false };
    const pace = tokenizer.pace('a', clientGone);
    const text = 'word '.repeat(20_000); // several slices: a turn between each
    const counting = tokenizer.countUpToAsync(text, 'cl100k_base', Infinity, pace);
    clientGone.aborted = true;
    await expect(counting).rejects.toBeInstanceOf(CallAbortedError);
    // Without a client to watch, the same count runs to its end.
    await expect(tokenizer.countUpToAsync(text, 'cl100k_base', Infinity, tokenizer.pace('a'))).resolves.toBe(
      tokenizer.count(text, 'cl100k_base'),
    );
  });
});
