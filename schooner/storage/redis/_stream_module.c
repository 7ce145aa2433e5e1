/* A Redis module with one command: SCHOONER.XADDRUN, many stream entries of one shape in one call.
 *
 *   SCHOONER.XADDRUN key ms seq spec name [value] ... record-values ...
 *
 * Adds entries with the IDs ms-seq, ms-(seq+1), ... One character of `spec` per field, in the entries'
 * field order: 'c' for a field whose value is the same in every entry (given right after its name), 'r'
 * for a field whose value each record brings. The record values follow the names, record by record, one
 * per 'r'. Replies with the number of entries added. The first ID must be above the stream's last one;
 * nothing is added when it is not.
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

/* Nothing here reads bytes as numbers: Redis parses the arguments, so the CPU's byte order does not matter. */

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

/* The entry's fields as XADD takes them (name, value, name, value, ...), and where each record's values go. */
typedef struct {
    RedisModuleString *fields[2 * MAX_FIELDS];
    int record_slots[MAX_FIELDS];
    int nfields;
    int nrecord;
} Shape;

/* Reads `spec` and the names and constants after it; returns the index of the first record value, or -1. */
static int read_shape(RedisModuleString **argv, int argc, Shape *shape) {
    size_t n;
    const char *spec = StringPtrLen(argv[4], &n);
    if (n == 0 || n > MAX_FIELDS) return -1;
    int at = 5;
    shape->nfields = (int)n;
    shape->nrecord = 0;
    for (size_t f = 0; f < n; f++) {
        if (at >= argc) return -1;
        shape->fields[2 * f] = argv[at++];
        if (spec[f] == 'c') {
            if (at >= argc) return -1;
            shape->fields[2 * f + 1] = argv[at++];
        } else if (spec[f] == 'r') {
            shape->record_slots[shape->nrecord++] = (int)(2 * f + 1);
        } else {
            return -1;
        }
    }
    if (shape->nrecord == 0 || at >= argc || (argc - at) % shape->nrecord != 0) return -1;
    return at;
}

/* What replicas and the AOF run: KEYS[1] and ARGV as this command's key and arguments. The first entry takes the
 * ID ms-seq as the call gave it, the others `ms-*`, which Redis (>= 7.0) makes the sequence after the entry just
 * added: the same IDs as on the primary. Lua numbers are doubles, so seq + n computed in Lua would lose the low
 * digits of a sequence above 2^53 and give replicas other IDs. */
static const char REPLAY[] =
    "local key, ms, spec = KEYS[1], ARGV[1], ARGV[3]\n"
    "local fields, slots, at = {}, {}, 4\n"
    "for f = 1, #spec do\n"
    "  fields[#fields + 1] = ARGV[at]; at = at + 1\n"
    "  if string.sub(spec, f, f) == 'c' then fields[#fields + 1] = ARGV[at]; at = at + 1\n"
    "  else fields[#fields + 1] = ''; slots[#slots + 1] = #fields end\n"
    "end\n"
    "local id, added = ms .. '-' .. ARGV[2], 0\n"
    "while at <= #ARGV do\n"
    "  for _, s in ipairs(slots) do fields[s] = ARGV[at]; at = at + 1 end\n"
    "  redis.call('XADD', key, id, unpack(fields))\n"
    "  id, added = ms .. '-*', added + 1\n"
    "end\n"
    "return added\n";

static int xaddrun(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    if (argc < 7) return WrongArity(ctx);
    long long ms, seq;
    if (StringToLongLong(argv[2], &ms) != MODULE_OK || StringToLongLong(argv[3], &seq) != MODULE_OK || ms < 0 ||
        seq < 0)
        return ReplyWithError(ctx, "ERR ms and seq must be integers >= 0");
    Shape shape;
    int at = read_shape(argv, argc, &shape);
    if (at < 0) return ReplyWithError(ctx, "ERR spec: one 'c' (name value) or 'r' (name) per field, then records");
    long long count = (argc - at) / shape.nrecord;
    RedisModuleKey *key = OpenKey(ctx, argv[1], OPEN_WRITE);
    int type = KeyType(key);
    if (type != KEYTYPE_EMPTY && type != KEYTYPE_STREAM) {
        CloseKey(key);
        return ReplyWithError(ctx, "WRONGTYPE Operation against a key holding the wrong kind of value");
    }
    long long added = 0;
    int first = at;
    for (; added < count; added++) {
        for (int r = 0; r < shape.nrecord; r++) shape.fields[shape.record_slots[r]] = argv[at++];
        RedisModuleStreamID id = {(uint64_t)ms, (uint64_t)seq + (uint64_t)added};
        if (StreamAdd(key, 0, &id, shape.fields, shape.nfields) != MODULE_OK) break;
    }
    CloseKey(key);
    if (added == 0) return ReplyWithError(ctx, "ERR the ID is equal or smaller than the stream's last one");
    /* The entries added, which are all of them unless an ID ran out (Redis then refuses the rest). */
    Replicate(ctx, "EVAL", "clsv", REPLAY, 1LL, argv[1], argv + 2,
              (size_t)(first - 2 + added * shape.nrecord));
    return ReplyWithLongLong(ctx, added);
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
    SetModuleAttribs(ctx, "schooner", 1, MODULE_API_VERSION);
    return CreateCommand(ctx, "schooner.xaddrun", xaddrun, "write deny-oom", 1, 1, 1);
}
