/* A Redis module with one command: SCHOONER.XADDPACKED, many stream entries of one shape in one call.
 *
 *   SCHOONER.XADDPACKED key ms seq count offset packed spec name [value] ...
 *
 * Adds `count` entries with the IDs ms-seq, ms-(seq+1), ... One character of `spec` per field, in the entries'
 * field order: 'c' for a field whose value is the same in every entry (given right after its name), 'r'
 * for a field whose value each record brings. The records' values are in `packed`, from byte `offset` on:
 * record by record, one per 'r', each as a MessagePack str 32 (the byte 0xdb, a 4-byte big-endian length,
 * that many bytes). Replies with the number of entries added and the offset after the last one's values.
 * The first ID must be above the stream's last one, and the count's values must all be in `packed`; nothing
 * is added when either is not.
 *
 * Why packed: each argument of a call costs Redis an object when it reads the command, a Lua string when
 * the append script gets it and another object when the script passes it on; for a 100-byte record that
 * was most of what the append cost Redis. The script passes one string for the whole batch instead. Why
 * MessagePack: where the module is missing, the script's cmsgpack.unpack reads the same string in one call.
 *
 * Replicas and the AOF receive the call as an EVAL of REPLAY below, a plain Lua loop of XADDs with the same
 * IDs, so neither needs the module. One propagated command per call: propagating one XADD per entry
 * (RedisModule_Replicate each) cost Redis 0.8 µs per record, more than the appends themselves.
 *
 * Why a module: Redis 8.2 has no command that appends several entries, and log_append.lua's per-record
 * `redis.call('XADD', ...)` cost Redis twice a bare XADD (docs/benchmarks.md: the Lua call's argument
 * objects and its reply). Each record stays one ordinary entry that plain Redis clients read and write.
 * log_append.lua uses the command only where redis.acl_check_cmd finds it, and otherwise XADDs as before.
 *
 * Why the declarations below are written here: Redis does not package its module header. A module fetches
 * each API function by name through the pointer Redis places first in the context of RedisModule_OnLoad;
 * only the documented functions this command uses are declared.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The packed lengths are read a byte at a time: nothing here depends on the CPU's byte order. */

typedef struct RedisModuleCtx RedisModuleCtx;
typedef struct RedisModuleString RedisModuleString;
typedef struct RedisModuleKey RedisModuleKey;
typedef struct {
    uint64_t ms;
    uint64_t seq;
} RedisModuleStreamID;
typedef int (*RedisModuleCmdFunc)(RedisModuleCtx *, RedisModuleString **, int);

#define MODULE_OK 0
#define MODULE_API_VERSION 1
#define OPEN_WRITE (1 << 1)
#define KEYTYPE_EMPTY 0
#define KEYTYPE_STREAM 7
#define MAX_FIELDS 8
#define SPEC_AT 7

static int (*GetApi)(const char *, void *);
static void (*SetModuleAttribs)(RedisModuleCtx *, const char *, int, int);
static int (*CreateCommand)(RedisModuleCtx *, const char *, RedisModuleCmdFunc, const char *, int, int, int);
static RedisModuleKey *(*OpenKey)(RedisModuleCtx *, RedisModuleString *, int);
static int (*KeyType)(RedisModuleKey *);
static int (*StreamAdd)(RedisModuleKey *, int, RedisModuleStreamID *, RedisModuleString **, int64_t);
static void (*CloseKey)(RedisModuleKey *);
static int (*ReplyWithError)(RedisModuleCtx *, const char *);
static int (*ReplyWithLongLong)(RedisModuleCtx *, long long);
static int (*WrongArity)(RedisModuleCtx *);
static int (*StringToLongLong)(const RedisModuleString *, long long *);
static const char *(*StringPtrLen)(const RedisModuleString *, size_t *);
static int (*Replicate)(RedisModuleCtx *, const char *, const char *, ...);
static RedisModuleString *(*CreateString)(RedisModuleCtx *, const char *, size_t);
static void (*FreeString)(RedisModuleCtx *, RedisModuleString *);
static int (*ReplyWithArray)(RedisModuleCtx *, long);

/* The entry's fields as XADD takes them (name, value, name, value, ...), and where each record's values go. */
typedef struct {
    RedisModuleString *fields[2 * MAX_FIELDS];
    int record_slots[MAX_FIELDS];
    int nfields;
    int nrecord;
} Shape;

/* Reads `spec` and the names and constants after it, which must end the call; 0 when they do not fit. */
static int read_shape(RedisModuleString **argv, int argc, Shape *shape) {
    size_t n;
    const char *spec = StringPtrLen(argv[SPEC_AT], &n);
    if (n == 0 || n > MAX_FIELDS) return 0;
    int at = SPEC_AT + 1;
    shape->nfields = (int)n;
    shape->nrecord = 0;
    for (size_t f = 0; f < n; f++) {
        if (at >= argc) return 0;
        shape->fields[2 * f] = argv[at++];
        if (spec[f] == 'c') {
            if (at >= argc) return 0;
            shape->fields[2 * f + 1] = argv[at++];
        } else if (spec[f] == 'r') {
            shape->record_slots[shape->nrecord++] = (int)(2 * f + 1);
        } else {
            return 0;
        }
    }
    return shape->nrecord > 0 && at == argc;
}

#define STR32 0xdb
#define STR32_HEADER 5

/* The length of the str 32 at p (its tag checked by the caller). */
static size_t str32_length(const unsigned char *p) {
    return ((size_t)p[1] << 24) | ((size_t)p[2] << 16) | ((size_t)p[3] << 8) | p[4];
}

/* The end of `values` packed values from `at` on, or (size_t)-1 when one is not a str 32 or runs past `len`. */
static size_t packed_end(const unsigned char *p, size_t len, size_t at, long long values) {
    for (long long v = 0; v < values; v++) {
        if (len - at < STR32_HEADER || p[at] != STR32) return (size_t)-1;
        size_t n = str32_length(p + at);
        at += STR32_HEADER;
        if (len - at < n) return (size_t)-1;
        at += n;
    }
    return at;
}

/* What replicas and the AOF run: KEYS[1] and ARGV as this command's key and arguments. The first entry takes the
 * ID ms-seq as the call gave it, the others `ms-*`, which Redis (>= 7.0) makes the sequence after the entry just
 * added: the same IDs as on the primary. Lua numbers are doubles, so seq + n computed in Lua would lose the low
 * digits of a sequence above 2^53 and give replicas other IDs. */
static const char REPLAY[] =
    "local key, ms, count, packed, spec = KEYS[1], ARGV[1], tonumber(ARGV[3]), ARGV[4], ARGV[5]\n"
    "local fields, slots, at = {}, {}, 6\n"
    "for f = 1, #spec do\n"
    "  fields[#fields + 1] = ARGV[at]; at = at + 1\n"
    "  if string.sub(spec, f, f) == 'c' then fields[#fields + 1] = ARGV[at]; at = at + 1\n"
    "  else fields[#fields + 1] = ''; slots[#slots + 1] = #fields end\n"
    "end\n"
    "local id, pos = ms .. '-' .. ARGV[2], 1\n"
    "for _ = 1, count do\n"
    "  for _, s in ipairs(slots) do _, fields[s], pos = struct.unpack('>BI4c0', packed, pos) end\n"
    "  redis.call('XADD', key, id, unpack(fields))\n"
    "  id = ms .. '-*'\n"
    "end\n"
    "return count\n";

static int xaddpacked(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    if (argc < SPEC_AT + 2) return WrongArity(ctx);
    long long ms, seq, count, offset;
    if (StringToLongLong(argv[2], &ms) != MODULE_OK || StringToLongLong(argv[3], &seq) != MODULE_OK ||
        StringToLongLong(argv[4], &count) != MODULE_OK || StringToLongLong(argv[5], &offset) != MODULE_OK ||
        ms < 0 || seq < 0 || count < 1 || offset < 0)
        return ReplyWithError(ctx, "ERR ms, seq and offset must be integers >= 0, count >= 1");
    Shape shape;
    if (!read_shape(argv, argc, &shape))
        return ReplyWithError(ctx, "ERR spec: one 'c' (name value) or 'r' (name) per field, and nothing after");
    size_t len;
    const unsigned char *packed = (const unsigned char *)StringPtrLen(argv[6], &len);
    if ((unsigned long long)offset > len || count > (long long)(len / STR32_HEADER) ||
        packed_end(packed, len, (size_t)offset, count * shape.nrecord) == (size_t)-1)
        return ReplyWithError(ctx, "ERR packed: fewer values than count records need");
    RedisModuleKey *key = OpenKey(ctx, argv[1], OPEN_WRITE);
    int type = KeyType(key);
    if (type != KEYTYPE_EMPTY && type != KEYTYPE_STREAM) {
        CloseKey(key);
        return ReplyWithError(ctx, "WRONGTYPE Operation against a key holding the wrong kind of value");
    }
    long long added = 0;
    size_t at = (size_t)offset;
    for (; added < count; added++) {
        size_t next = at;
        for (int r = 0; r < shape.nrecord; r++) {
            size_t n = str32_length(packed + next);
            shape.fields[shape.record_slots[r]] = CreateString(ctx, (const char *)packed + next + STR32_HEADER, n);
            next += STR32_HEADER + n;
        }
        RedisModuleStreamID id = {(uint64_t)ms, (uint64_t)seq + (uint64_t)added};
        int failed = StreamAdd(key, 0, &id, shape.fields, shape.nfields) != MODULE_OK;
        for (int r = 0; r < shape.nrecord; r++) FreeString(ctx, shape.fields[shape.record_slots[r]]);
        if (failed) break;
        at = next;
    }
    CloseKey(key);
    if (added == 0) return ReplyWithError(ctx, "ERR the ID is equal or smaller than the stream's last one");
    /* The entries added, which are all of them unless an ID ran out (Redis then refuses the rest). */
    /* The values they took: the whole string when they took all of it (the common call), else a copy of theirs. */
    RedisModuleString *taken = argv[6];
    if (offset != 0 || at != len) taken = CreateString(ctx, (const char *)packed + offset, at - (size_t)offset);
    Replicate(ctx, "EVAL", "clssslsv", REPLAY, 1LL, argv[1], argv[2], argv[3], added, taken, argv + SPEC_AT,
              (size_t)(argc - SPEC_AT));
    if (taken != argv[6]) FreeString(ctx, taken);
    ReplyWithArray(ctx, 2);
    ReplyWithLongLong(ctx, added);
    return ReplyWithLongLong(ctx, (long long)at);
}

#define FETCH(var, name) \
    if (GetApi("RedisModule_" name, (void *)&var) != MODULE_OK) return 1

int RedisModule_OnLoad(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    (void)argv;
    (void)argc;
    GetApi = (int (*)(const char *, void *))((void **)ctx)[0];
    FETCH(SetModuleAttribs, "SetModuleAttribs");
    FETCH(CreateCommand, "CreateCommand");
    FETCH(OpenKey, "OpenKey");
    FETCH(KeyType, "KeyType");
    FETCH(StreamAdd, "StreamAdd");
    FETCH(CloseKey, "CloseKey");
    FETCH(ReplyWithError, "ReplyWithError");
    FETCH(ReplyWithLongLong, "ReplyWithLongLong");
    FETCH(WrongArity, "WrongArity");
    FETCH(StringToLongLong, "StringToLongLong");
    FETCH(StringPtrLen, "StringPtrLen");
    FETCH(Replicate, "Replicate");
    FETCH(CreateString, "CreateString");
    FETCH(FreeString, "FreeString");
    FETCH(ReplyWithArray, "ReplyWithArray");
    SetModuleAttribs(ctx, "schooner", 1, MODULE_API_VERSION);
    return CreateCommand(ctx, "schooner.xaddpacked", xaddpacked, "write deny-oom", 1, 1, 1);
}
