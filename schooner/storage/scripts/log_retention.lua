#!lua flags=allow-oom
-- uses: _ids
-- log_retention.lua: applies a topic's retention to one partition that may receive no writes.
-- KEYS[1] stream   KEYS[2] partition state hash   KEYS[3] time index   KEYS[9] aborted transactions
-- ARGV[1] retention.ms (-1: none)   ARGV[2] retention.bytes (-1: none)   ARGV[3] '1' to trim with ~
-- ARGV[4] '1' for a dense topic
-- Returns the number of entries removed. Aborted transactions whose marker is gone are forgotten.
-- allow-oom: it only removes entries (and moves valid_from), which frees memory when Redis is full.
local removed = apply_retention(
  KEYS[1], KEYS[2], KEYS[3], tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3] == '1', now_ms(), ARGV[4] == '1'
)
forget_trimmed_aborts(KEYS[1], KEYS[9])
return removed
