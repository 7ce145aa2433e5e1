-- schema_delete.lua: soft or permanent deletion of one version of a subject, or of all its versions, in one
-- step. A permanent delete takes only what a soft delete took first, as the registry's clients expect.
-- KEYS[1] the subject's versions   KEYS[2] subjects   KEYS[3] uses (schema id -> versions holding it)
-- ARGV[1] subject   ARGV[2] "soft" or "permanent"   ARGV[3] a version ("" for every version)
-- Returns {"deleted", version...}, or {"no-subject"}, {"no-version"}, {"already-deleted"} (soft, nothing left
-- to delete), {"not-soft-deleted"} (permanent, a version still live).
local soft = ARGV[2] == 'soft'
local versions = redis.call('HGETALL', KEYS[1])
if #versions == 0 then
  return {'no-subject'}
end
local chosen = {}
for i = 1, #versions, 2 do
  if ARGV[3] == '' or versions[i] == ARGV[3] then
    table.insert(chosen, {versions[i], versions[i + 1]})
  end
end
if #chosen == 0 then
  return {'no-version'}
end
local done = {'deleted'}
for _, pair in ipairs(chosen) do
  local deleted = string.find(pair[2], ':deleted', 1, true) ~= nil
  if soft then
    if not deleted then
      redis.call('HSET', KEYS[1], pair[1], pair[2] .. ':deleted')
      table.insert(done, tonumber(pair[1]))
    end
  else
    if not deleted then
      return {'not-soft-deleted'}
    end
  end
end
if soft then
  if #done == 1 then
    return {'already-deleted'}
  end
  return done
end
for _, pair in ipairs(chosen) do
  redis.call('HDEL', KEYS[1], pair[1])
  redis.call('HINCRBY', KEYS[3], string.sub(pair[2], 1, #pair[2] - #':deleted'), -1)
  table.insert(done, tonumber(pair[1]))
end
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('SREM', KEYS[2], ARGV[1])
end
return done
