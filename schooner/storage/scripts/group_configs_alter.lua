-- group_configs_alter.lua: changes a group's configs (IncrementalAlterConfigs and AlterConfigs on the
-- GROUP resource), unless they changed since the caller read them (it validated against those).
-- KEYS[1] the group's configs hash
-- ARGV[1] n, the number of name/value pairs the caller read (-1: do not compare), then those pairs;
-- then "1" to drop every config first (AlterConfigs) or "0"; then m, the number of configs to set, then
-- m name/value pairs; then the names to delete.
-- Returns 1 when changed, 0 when the hash is not what the caller read (nothing written).
local n = tonumber(ARGV[1])
local at = 2
if n >= 0 then
  if redis.call('HLEN', KEYS[1]) ~= n then return 0 end
  for i = 0, n - 1 do
    if redis.call('HGET', KEYS[1], ARGV[at + 2 * i]) ~= ARGV[at + 2 * i + 1] then return 0 end
  end
  at = at + 2 * n
end
if ARGV[at] == '1' then redis.call('DEL', KEYS[1]) end
local m = tonumber(ARGV[at + 1])
at = at + 2
if m > 0 then
  redis.call('HSET', KEYS[1], unpack(ARGV, at, at + 2 * m - 1))
end
at = at + 2 * m
if #ARGV >= at then
  redis.call('HDEL', KEYS[1], unpack(ARGV, at))
end
return 1
