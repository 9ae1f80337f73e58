/**
 * Waits until `condition` holds, checking every `everyMs`: for states that raise no event. No deadline
 * of its own (jest's timeout is the limit), so a slow machine only makes the wait longer.
 */
export async function until(condition: () => boolean | Promise<boolean>, everyMs = 25): Promise<void> {
  while (!(await condition())) await new Promise((r) => setTimeout(r, everyMs));
}
