/** A BulkPace for tests whose every charge is a turn: records the units charged and the turns awaited. */
export function recordingPace() {
  const pace = {
    units: 0,
    turns: 0,
    charge(units: number) {
      pace.units += units;
      return Promise.resolve().then(() => void pace.turns++);
    },
  };
  return pace;
}
