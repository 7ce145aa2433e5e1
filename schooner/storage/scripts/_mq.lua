-- Shared helpers of the MQ scripts, prepended to scripts whose header says "-- uses: _mq".
-- A flat {name, value, ...} reply (XINFO) as a table.
local function fields_of(flat)
  local t = {}
  for i = 1, #flat, 2 do t[flat[i]] = flat[i + 1] end
  return t
end

-- The text of an error caught with pcall (Redis 7 passes a table with an err field).
local function err_text(err)
  if type(err) == 'table' then return tostring(err.err) end
  return tostring(err)
end

local function split_lines(s)
  local out = {}
  for part in string.gmatch(s, '[^\n]+') do out[#out + 1] = part end
  return out
end

local function redis_now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
