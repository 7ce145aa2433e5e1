-- dead_letter.lua: moves a delivered entry to its partition's dead-letter stream and acks it, in one step.
-- KEYS[1] stream   KEYS[2] dead-letter stream
-- ARGV[1] group   ARGV[2] entry ID   then the dead letter's field/value pairs
-- Returns the dead letter's ID; nil when the entry was no longer pending for the group (another
-- member settled it), in which case nothing is added.
if redis.call('XACK', KEYS[1], ARGV[1], ARGV[2]) == 0 then return false end
return redis.call('XADD', KEYS[2], '*', unpack(ARGV, 3))
