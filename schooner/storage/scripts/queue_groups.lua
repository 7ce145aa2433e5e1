-- queue_groups.lua: the consumer groups of one partition stream (XINFO GROUPS), {} when there is no stream.
-- KEYS[1] stream
-- Returns XINFO GROUPS' reply: one flat {name, ..., consumers, ..., pending, ..., lag, ...} per group.
local ok, groups = pcall(redis.call, 'XINFO', 'GROUPS', KEYS[1])
if not ok then return {} end
return groups
