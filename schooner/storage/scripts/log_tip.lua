-- log_tip.lua: the stream's last generated ID, which every append changes, whoever makes it (a plain
-- Redis writer's XADD publishes no notice). One ID rather than XINFO STREAM's reply, whose first and
-- last entries stay on the server.
-- KEYS[1] stream
-- Returns the ID, or false when the stream is missing.
local info = redis.pcall('XINFO', 'STREAM', KEYS[1])
if info.err then
  return false
end
for i = 1, #info, 2 do
  if info[i] == 'last-generated-id' then
    return info[i + 1]
  end
end
return false
