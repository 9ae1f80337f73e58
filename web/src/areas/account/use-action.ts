import { useCallback, useState } from 'react';
import { failureOf, withStepUp } from './step-up';

/** A section's one action at a time: busy while it runs, then its success text or its error (step-up included). */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [success, setSuccess] = useState<string | null>(null);
  const run = useCallback(async (action: () => Promise<unknown>, done?: string): Promise<boolean> => {
    setBusy(true);
    setError(null);
    setSuccess(null);
    try {
      await withStepUp(action);
      if (done) setSuccess(done);
      return true;
    } catch (e) {
      setError(failureOf(e));
      return false;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, success, run, setError };
}
