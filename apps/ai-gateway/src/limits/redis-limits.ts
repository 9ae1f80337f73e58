import type { RedisSharedState } from '@app/platform';
import type { LeaseCounter, WindowCounter } from './call-limits';
import type { AdmitAnswer, WindowSettlement } from './limit-answer';

// KEYS: the windows (hashes of bucket -> amount), then the leases (sorted sets of hold -> expiry ms), then, for a
// call that settles, its hold marker. ARGV: now, #windows, #leases, hold, lease ttl ms; per window limit, window ms,
// bucket ms, amount; per lease limit. Answers {allowed, refused index (1-based, 0: none), retry ms (-1: never), each
// window's use}: all checked first, then, only when every one passes, all reserved (and the hold marked).
const ADMIT = `
local now = tonumber(ARGV[1])
local nw = tonumber(ARGV[2])
local nl = tonumber(ARGV[3])
local hold = ARGV[4]
local ttl = tonumber(ARGV[5])
local refused = 0
local retry = 0
local used = {}
for i = 1, nw do
  local a = 5 + (i - 1) * 4
  local lim = tonumber(ARGV[a + 1])
  local win = tonumber(ARGV[a + 2])
  local bms = tonumber(ARGV[a + 3])
  local amt = tonumber(ARGV[a + 4])
  local first = math.floor((now - win) / bms)
  local all = redis.call('HGETALL', KEYS[i])
  local total = 0
  local kept = {}
  for j = 1, #all, 2 do
    local b = tonumber(all[j])
    if b < first then
      redis.call('HDEL', KEYS[i], all[j])
    else
      local v = tonumber(all[j + 1])
      total = total + v
      kept[#kept + 1] = {b, v}
    end
  end
  used[i] = total
  if refused == 0 and amt > 0 and total + amt > lim then
    refused = i
    retry = -1
    if amt <= lim then
      table.sort(kept, function(x, y) return x[1] < y[1] end)
      local freed = 0
      for _, bv in ipairs(kept) do
        freed = freed + bv[2]
        if total - freed + amt <= lim then
          retry = math.max(1, (bv[1] + 1) * bms + win - now)
          break
        end
      end
    end
  end
end
for i = 1, nl do
  local k = KEYS[nw + i]
  redis.call('ZREMRANGEBYSCORE', k, '-inf', now)
  if refused == 0 and redis.call('ZCARD', k) >= tonumber(ARGV[5 + nw * 4 + i]) then
    refused = nw + i
    retry = 1000
  end
end
if refused > 0 then
  local out = {0, refused, retry}
  for i = 1, nw do out[#out + 1] = used[i] end
  return out
end
for i = 1, nw do
  local a = 5 + (i - 1) * 4
  local amt = tonumber(ARGV[a + 4])
  if amt > 0 then
    local win = tonumber(ARGV[a + 2])
    local bms = tonumber(ARGV[a + 3])
    redis.call('HINCRBY', KEYS[i], string.format('%d', math.floor(now / bms)), amt)
    redis.call('PEXPIRE', KEYS[i], win + bms)
    used[i] = used[i] + amt
  end
end
for i = 1, nl do
  redis.call('ZADD', KEYS[nw + i], now + ttl, hold)
  -- Never shortens the set's life (a replica configured with a shorter hold must not expire others' leases).
  if redis.call('PTTL', KEYS[nw + i]) < ttl then redis.call('PEXPIRE', KEYS[nw + i], ttl) end
end
if #KEYS > nw + nl then redis.call('SET', KEYS[nw + nl + 1], '1', 'PX', ttl) end
local out = {1, 0, 0}
for i = 1, nw do out[#out + 1] = used[i] end
return out`;

// KEYS: token windows, then leases, then the hold marker. ARGV: now, #windows, #leases, hold; per window bucket,
// reserved, actual, bucket ms, window ms. The reservation made in its bucket becomes the actual use; usage above it
// is counted now; the call's leases end. Once: without its marker (settled already) nothing changes.
const SETTLE = `
local now = tonumber(ARGV[1])
local nw = tonumber(ARGV[2])
local nl = tonumber(ARGV[3])
if redis.call('DEL', KEYS[nw + nl + 1]) == 0 then return 0 end
for i = 1, nw do
  local a = 4 + (i - 1) * 5
  local b = ARGV[a + 1]
  local res = tonumber(ARGV[a + 2])
  local act = tonumber(ARGV[a + 3])
  local bms = tonumber(ARGV[a + 4])
  local win = tonumber(ARGV[a + 5])
  if act < res then
    local cur = redis.call('HGET', KEYS[i], b)
    if cur then
      local v = tonumber(cur) - (res - act)
      if v <= 0 then redis.call('HDEL', KEYS[i], b) else redis.call('HSET', KEYS[i], b, v) end
    end
  elseif act > res then
    redis.call('HINCRBY', KEYS[i], string.format('%d', math.floor(now / bms)), act - res)
    redis.call('PEXPIRE', KEYS[i], win + bms)
  end
end
for i = 1, nl do redis.call('ZREM', KEYS[nw + i], ARGV[4]) end
return 1`;

// KEYS: the hold marker, then the call's leases. ARGV: now, ttl ms, hold. A running call keeps them another ttl.
const RENEW = `
local ttl = tonumber(ARGV[2])
if redis.call('PEXPIRE', KEYS[1], ttl) == 0 then return 0 end
for i = 2, #KEYS do
  redis.call('ZADD', KEYS[i], 'XX', tonumber(ARGV[1]) + ttl, ARGV[3])
  if redis.call('PTTL', KEYS[i]) < ttl then redis.call('PEXPIRE', KEYS[i], ttl) end
end
return 1`;

/**
 * Windows and leases in Redis, one script per admission and per settlement (the same decisions as
 * ai_limits_admit and ai_limits_settle in PostgreSQL). Budgets are money and stay in PostgreSQL.
 */
export class RedisLimits {
  constructor(private readonly redis: RedisSharedState) {}

  async admit(
    now: number,
    hold: string,
    leaseTtlMs: number,
    windows: WindowCounter[],
    leases: LeaseCounter[],
  ): Promise<AdmitAnswer> {
    const args: Array<string | number> = [now, windows.length, leases.length, hold, leaseTtlMs];
    for (const w of windows) args.push(w.limit, w.window_ms, w.bucket_ms, w.amount);
    for (const l of leases) args.push(l.limit);
    const keys = [
      ...windows.map((w) => `lim:${w.key}`),
      ...leases.map((l) => `lim:${l.key}`),
      ...(hold ? [`lim:hold:${hold}`] : []),
    ];
    const r = (await this.redis.evalScript(ADMIT, keys, args)) as number[];
    const used = r.slice(3).map(Number);
    const answer: AdmitAnswer = {
      allowed: r[0] === 1,
      windows: windows.map((w, i) => ({
        name: w.name,
        limit: w.limit,
        used: used[i],
        reset_ms: (Math.floor(now / w.bucket_ms) + 1) * w.bucket_ms + w.window_ms - now,
      })),
    };
    if (!answer.allowed) {
      const i = Number(r[1]) - 1;
      const retry = Number(r[2]);
      answer.refused =
        i < windows.length
          ? { name: windows[i].name, kind: 'window', retry_ms: retry < 0 ? null : retry }
          : { name: leases[i - windows.length].name, kind: 'concurrency', retry_ms: retry };
    }
    return answer;
  }

  /** Settles once (false: settled already, or the marker expired). */
  async settle(
    now: number,
    hold: string,
    windows: WindowSettlement[],
    leases: Array<{ key: string }>,
  ): Promise<boolean> {
    const args: Array<string | number> = [now, windows.length, leases.length, hold];
    for (const w of windows) args.push(String(w.bucket), w.reserved, w.actual, w.bucket_ms, w.window_ms);
    const done = await this.redis.evalScript(
      SETTLE,
      [...windows.map((w) => `lim:${w.key}`), ...leases.map((l) => `lim:${l.key}`), `lim:hold:${hold}`],
      args,
    );
    return Number(done) === 1;
  }

  /** Keeps a running call's hold marker and leases another `ttlMs`; false when the marker is gone. */
  async renew(now: number, hold: string, ttlMs: number, leases: Array<{ key: string }>): Promise<boolean> {
    const kept = await this.redis.evalScript(
      RENEW,
      [`lim:hold:${hold}`, ...leases.map((l) => `lim:${l.key}`)],
      [now, ttlMs, hold],
    );
    return Number(kept) === 1;
  }
}
