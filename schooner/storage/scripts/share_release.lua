-- uses: _ids, _share
-- share_release.lua: releases every record a member still holds on one share partition (its share
-- session closed, or it left the group), so the other members get them at once, not after the lock.
-- The delivery count is kept: the next delivery counts as another attempt.
-- KEYS[1] stream   ARGV[1] group   ARGV[2] member   ARGV[3] most entries to release
-- Returns how many were released.
local ok, pending = pcall(redis.call, 'XPENDING', KEYS[1], ARGV[1], '-', '+', tonumber(ARGV[3]), ARGV[2])
if not ok then return 0 end
for i = 1, #pending, 500 do
  local args = {'XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0}
  for j = i, math.min(i + 499, #pending) do args[#args + 1] = pending[j][1] end
  args[#args + 1] = 'IDLE'
  args[#args + 1] = RELEASED_IDLE_MS
  args[#args + 1] = 'JUSTID'
  redis.call(unpack(args))
end
return #pending
