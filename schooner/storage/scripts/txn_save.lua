-- txn_save.lua: replaces a transactional id's state if nobody changed it since it was read.
-- KEYS[1] the id's state hash (fields version, state)
-- ARGV[1] the version read (0: the id had no state)   ARGV[2] the new state (JSON), or '' to delete
-- Returns the new version, or 0 when the stored version differs (another broker got there first).
local version = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if version ~= tonumber(ARGV[1]) then return 0 end
if ARGV[2] == '' then
  redis.call('DEL', KEYS[1])
  return version + 1
end
redis.call('HSET', KEYS[1], 'version', version + 1, 'state', ARGV[2])
return version + 1
