-- group_delete.lua: deletes a group that has no members, with its committed offsets.
-- KEYS[1] group hash   KEYS[2] group offsets hash
-- Returns 1 when deleted, 0 when there was nothing to delete, -1 when the group still has members.
local members = redis.call('HGET', KEYS[1], 'members')
if members and members ~= '[]' then return -1 end
return math.min(redis.call('DEL', KEYS[1], KEYS[2]), 1)
