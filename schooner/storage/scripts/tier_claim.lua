#!lua flags=allow-oom
-- tier_claim.lua: takes or renews the claim to archive one partition to the cold tier.
-- KEYS[1] the partition's archiver key   ARGV[1] the broker's token   ARGV[2] claim time (ms)
-- Returns 1 when the caller holds the claim now (taken, or renewed as its own), 0 when another does.
-- allow-oom: the claim is one small key, overwritten each step; the archiver must run when Redis is full.
local held = redis.call('GET', KEYS[1])
if held == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if held then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
