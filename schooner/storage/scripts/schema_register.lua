-- schema_register.lua: registers a schema under a subject as its next version, unless the subject already
-- has it (not deleted), in one step, so two brokers registering at once cannot both take a version.
-- KEYS[1] next-id   KEYS[2] by-id   KEYS[3] by-fingerprint   KEYS[4] the subject's versions   KEYS[5] subjects
-- KEYS[6] uses (schema id -> how many versions, soft-deleted ones included, hold it)
-- ARGV[1] subject   ARGV[2] fingerprint   ARGV[3] the schema's JSON document
-- ARGV[4] the subject's latest version the caller checked compatibility against (-1: do not check)
-- ARGV[5] the id to register it under ("" to use the fingerprint's id or a new one; IMPORT mode gives one)
-- ARGV[6] the version to register ("" for the next one; IMPORT mode may give one)
-- Returns {"exists", version, id}, {"new", version, id}, {"moved", latest} when a version was added since
-- the caller checked, {"id-taken", id} when the given id holds another schema, {"version-taken", version}.
local id = redis.call('HGET', KEYS[3], ARGV[2])
if ARGV[5] ~= '' then
  local held = redis.call('HGET', KEYS[2], ARGV[5])
  if held and id ~= ARGV[5] then
    return {'id-taken', ARGV[5]}
  end
  id = ARGV[5]
end
local latest = 0
local versions = redis.call('HGETALL', KEYS[4])
for i = 1, #versions, 2 do
  local version = tonumber(versions[i])
  local value = versions[i + 1]
  if id and value == id and ARGV[6] == '' then
    return {'exists', version, tonumber(id)}
  end
  if version > latest then
    latest = version
  end
end
if tonumber(ARGV[4]) >= 0 and tonumber(ARGV[4]) ~= latest then
  return {'moved', latest}
end
local version = latest + 1
if ARGV[6] ~= '' then
  version = tonumber(ARGV[6])
  if redis.call('HEXISTS', KEYS[4], ARGV[6]) == 1 then
    return {'version-taken', version}
  end
end
if not id then
  id = tostring(redis.call('INCR', KEYS[1]))
elseif tonumber(redis.call('GET', KEYS[1]) or '0') < tonumber(id) then
  -- an imported id: ids handed out later start above it
  redis.call('SET', KEYS[1], id)
end
redis.call('HSET', KEYS[2], id, ARGV[3])
redis.call('HSET', KEYS[3], ARGV[2], id)
redis.call('HSET', KEYS[4], version, id)
redis.call('SADD', KEYS[5], ARGV[1])
redis.call('HINCRBY', KEYS[6], id, 1)
return {'new', version, tonumber(id)}
