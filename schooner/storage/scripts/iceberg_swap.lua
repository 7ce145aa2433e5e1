-- iceberg_swap.lua: moves an Iceberg table's pointer (its current metadata file) in the cold tier's
-- catalog, only from the metadata file the commit was built on: compare-and-swap.
-- KEYS[1] the tables hash (namespace NUL table -> metadata location)
-- ARGV[1] the table's field   ARGV[2] the location the commit was built on ("": none, a create)
-- ARGV[3] the new location ("": drop the table)
-- Returns 1 when swapped, 0 when the table's pointer was elsewhere (another writer committed first).
local current = redis.call('HGET', KEYS[1], ARGV[1])
if current == false then current = '' end
if current ~= ARGV[2] then return 0 end
if ARGV[3] == '' then
  redis.call('HDEL', KEYS[1], ARGV[1])
else
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
end
return 1
