-- uses: _mq
-- retry_move_due.lua: claims the due retries of one partition as a move batch.
-- The caller appends the batch through log_append.lua as an idempotent producer (the mover's producer id,
-- base sequence = the batch's), then confirms with retry_moved.lua. A batch stays claimed until
-- confirmed, so a mover that crashes hands the very same batch to the next one, whose append the
-- append script recognises as a duplicate: each retry is appended exactly once.
-- KEYS[1] retry schedule   KEYS[2] retry payloads   KEYS[3] mover state (hash)
-- ARGV[1] max retries per batch
-- Returns {} when nothing is due; -1 when the mover has no producer id yet; else
-- {producer id, base sequence, retry id, packed record, retry id, packed record, ...}.
local state = KEYS[3]
local ids, seq
local batch = redis.call('HGET', state, 'batch')
if batch then
  ids = split_lines(batch)
  seq = redis.call('HGET', state, 'batch_seq')
else
  ids = redis.call('ZRANGE', KEYS[1], '-inf', redis_now_ms(), 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[1]))
  if #ids == 0 then return {} end
end
local pid = redis.call('HGET', state, 'producer_id')
if not pid then return -1 end
if not batch then
  seq = redis.call('HGET', state, 'next_seq') or '0'
  redis.call('HSET', state, 'batch', table.concat(ids, '\n'), 'batch_seq', seq)
end
local payloads = redis.call('HMGET', KEYS[2], unpack(ids))
local out = {tonumber(pid), tonumber(seq)}
for i, id in ipairs(ids) do
  out[#out + 1] = id
  out[#out + 1] = payloads[i] or ''
end
return out
