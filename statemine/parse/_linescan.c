/*
 * statemine.parse._linescan: the tokenizer of statemine log lines (docs/log-format.md).
 *
 *     STATEMINE t=<s> conn=<id> [role=<r>] state=<Name>|event=<Name> [key=value ...]
 *
 * found anywhere in a line, after any prefix. A Scanner reads blocks of whole lines in
 * file order and turns each into columns (line, time, trace code, kind, name code, the
 * four numeric fields, extra key=value text). It keeps, across blocks, the tables that
 * give traces (conn, role) and names their dense integer codes (first-seen order) and,
 * per trace, the last time, its line and the time of an event=Close line, so time order
 * is checked while streaming. Several files go through one Scanner (next_file between
 * them): a trace is (file, conn, role), names are shared, and feed/take gather the rows
 * of many small files into one set of columns. The scan loop runs without the GIL; it touches no Python
 * object. It validates and reports the first bad line as an error code; the Python side
 * (statemine/parse/statemine_log.py) words the message.
 *
 * Written for statemine; no code taken from elsewhere. The exact decimal fast path is
 * Clinger's (W. D. Clinger, "How to Read Floating Point Numbers Accurately", PLDI 1990):
 * a mantissa below 2^53 divided by an exact power of ten <= 1e22 is correctly rounded.
 */
#define PY_SSIZE_T_CLEAN
#define _GNU_SOURCE
#include <Python.h>
#include <structmember.h>
#include <locale.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Error codes (mirrored in statemine_log.py). */
enum {
    E_NONE = 0,
    E_NOMEM,
    E_LONG_LINE,     /* a line longer than max_line_bytes */
    E_NOT_UTF8,      /* the statemine line is not UTF-8 */
    E_MALFORMED,     /* the fixed head (t, conn, role, state|event) is not there */
    E_NUMBER,        /* key= holds no number: token = the value */
    E_TIME_FINITE,   /* t= is inf or nan, or beyond max_time in magnitude */
    E_BACKWARDS,     /* time goes backwards within a trace: a = t, b = previous t, line2 */
    E_TWICE,         /* a numeric key given twice */
    E_OUT_OF_PLACE,  /* t/conn/role/state/event among the trailing fields */
    E_NOT_KV,        /* a trailing token that is not key=value */
};

#define N_NUMERIC 4
static const char *const NUMERIC_KEYS[N_NUMERIC] = {"cwnd", "inflight", "ssthresh", "srtt"};
static const size_t NUMERIC_LEN[N_NUMERIC] = {4, 8, 8, 4};

#if defined(__GNUC__)
#define ALWAYS_INLINE __attribute__((always_inline))
#else
#define ALWAYS_INLINE
#endif

/* ---- growable buffers ---------------------------------------------------------------- */

typedef struct {
    char *data;
    size_t len, cap;
} Buf;

static int buf_reserve(Buf *b, size_t extra)
{
    if (b->len + extra <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra)
        cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p)
        return -1;
    b->data = p;
    b->cap = cap;
    return 0;
}

static int buf_put(Buf *b, const void *src, size_t n)
{
    if (buf_reserve(b, n))
        return -1;
    memcpy(b->data + b->len, src, n);
    b->len += n;
    return 0;
}

static void buf_free(Buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

/* ---- the rows of one block, column by column ---------------------------------------- */

typedef struct {
    int64_t *line;
    double *time;
    int32_t *trace;
    uint8_t *kind;
    int32_t *name;
    double *num[N_NUMERIC];
    size_t n, cap;
} Rows;

#define GROW(field, cap)                                                   \
    do {                                                                   \
        void *p_ = realloc((field), (cap) * sizeof(*(field)));             \
        if (!p_)                                                           \
            return -1;                                                     \
        (field) = p_;                                                      \
    } while (0)

/* Room for one more row. */
static int rows_reserve(Rows *r)
{
    if (r->n < r->cap)
        return 0;
    size_t cap = r->cap ? r->cap * 2 : 4096;
    GROW(r->line, cap);
    GROW(r->time, cap);
    GROW(r->trace, cap);
    GROW(r->kind, cap);
    GROW(r->name, cap);
    for (int i = 0; i < N_NUMERIC; i++)
        GROW(r->num[i], cap);
    r->cap = cap;
    return 0;
}

static void rows_free(Rows *r)
{
    free(r->line);
    free(r->time);
    free(r->trace);
    free(r->kind);
    free(r->name);
    for (int i = 0; i < N_NUMERIC; i++)
        free(r->num[i]);
    memset(r, 0, sizeof(*r));
}

/* ---- interning: byte strings -> codes 0, 1, 2, ... in first-seen order --------------- */

typedef struct {
    Buf keys;          /* key bytes back to back */
    Buf offsets;       /* size_t per code: start in keys; one more entry at the end */
    uint64_t *slots;   /* open addressing: (hash >> 32) << 32 | (code + 1); 0 = empty;
                        * n_slots is a power of two; one word per probe (one cache miss) */
    size_t n, n_slots;
} Intern;

static inline ALWAYS_INLINE uint64_t hash_bytes(const char *s, size_t n)
{
    /* 8 bytes a step, each word mixed by a multiply-xorshift (a 64-bit variant of the
     * classic multiplicative hash); the tail word is zero padded. */
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ULL;
        h ^= h >> 31;
        s += 8;
        n -= 8;
    }
    if (n) {
        uint64_t w = 0;
        memcpy(&w, s, n);
        h = (h ^ w) * 0x94D049BB133111EBULL;
        h ^= h >> 29;
    }
    return h ^ (h >> 32);
}

/* a[0:n] == b[0:n], a word at a time (keys are short: no call into libc's memcmp). */
static inline int bytes_eq(const char *a, const char *b, size_t n)
{
    while (n >= 8) {
        uint64_t x, y;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        if (x != y)
            return 0;
        a += 8;
        b += 8;
        n -= 8;
    }
    while (n--)
        if (*a++ != *b++)
            return 0;
    return 1;
}

static size_t intern_offset(const Intern *t, size_t code)
{
    return ((const size_t *)t->offsets.data)[code];
}

static int intern_init(Intern *t)
{
    memset(t, 0, sizeof(*t));
    t->n_slots = 1024;
    t->slots = calloc(t->n_slots, sizeof(uint64_t));
    size_t zero = 0;
    if (!t->slots || buf_put(&t->offsets, &zero, sizeof zero))
        return -1;
    return 0;
}

static void intern_free(Intern *t)
{
    buf_free(&t->keys);
    buf_free(&t->offsets);
    free(t->slots);
    t->slots = NULL;
}

#define SLOT_TAG(h) ((h) & 0xFFFFFFFF00000000ULL)

static int intern_grow(Intern *t)
{
    size_t n_slots = t->n_slots * 2;
    uint64_t *slots = calloc(n_slots, sizeof(uint64_t));
    if (!slots)
        return -1;
    for (size_t code = 0; code < t->n; code++) { /* the hashes again, from the keys */
        size_t start = intern_offset(t, code);
        uint64_t h = hash_bytes(t->keys.data + start, intern_offset(t, code + 1) - start);
        size_t j = h & (n_slots - 1);
        while (slots[j])
            j = (j + 1) & (n_slots - 1);
        slots[j] = SLOT_TAG(h) | (uint64_t)(code + 1);
    }
    free(t->slots);
    t->slots = slots;
    t->n_slots = n_slots;
    return 0;
}

/* The code of key[0:n] whose hash_bytes is h, added when new; -1 when out of memory.
 * *added tells which. */
static int32_t intern_get_hashed(Intern *t, const char *key, size_t n, uint64_t h, int *added)
{
    size_t j = h & (t->n_slots - 1);
    *added = 0;
    for (;;) {
        uint64_t slot = t->slots[j];
        if (!slot)
            break;
        if (SLOT_TAG(slot) == SLOT_TAG(h)) {
            size_t code = (size_t)(slot & 0xFFFFFFFFULL) - 1;
            size_t start = intern_offset(t, code), end = intern_offset(t, code + 1);
            if (end - start == n && bytes_eq(t->keys.data + start, key, n))
                return (int32_t)code;
        }
        j = (j + 1) & (t->n_slots - 1);
    }
    if (t->n >= INT32_MAX - 1)
        return -1;
    int32_t code = (int32_t)t->n;
    if (buf_put(&t->keys, key, n))
        return -1;
    size_t end = t->keys.len;
    if (buf_put(&t->offsets, &end, sizeof end))
        return -1;
    t->slots[j] = SLOT_TAG(h) | (uint64_t)(code + 1);
    t->n++;
    *added = 1;
    if (t->n * 2 > t->n_slots && intern_grow(t))
        return -1;
    return code;
}

/* intern_get_hashed of key[0:n], hashed here. */
static inline int32_t intern_get(Intern *t, const char *key, size_t n, int *added)
{
    return intern_get_hashed(t, key, n, hash_bytes(key, n), added);
}

/* Start loading the slot where key hash h is looked for first (a miss in a big table),
 * so the line's other fields are parsed meanwhile. */
static inline void intern_prefetch(const Intern *t, uint64_t h)
{
#if defined(__GNUC__)
    __builtin_prefetch(&t->slots[h & (t->n_slots - 1)]);
#else
    (void)t;
    (void)h;
#endif
}

/* ---- lexing helpers ------------------------------------------------------------------ */

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* Word-at-a-time search (SWAR). ONES: 0x01 in every byte, HIGHS: 0x80 in every byte.
 * zero_bytes(x) flags (bit 7) the bytes of x that are zero, less_bytes(x, n) those below n
 * (n <= 128); a borrow can only flag bytes above the lowest true one, so the lowest flag
 * is exact. Little-endian byte order is needed to find the lowest; elsewhere the byte
 * loops below are used alone. */
#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && defined(__GNUC__)
#define SWAR 1
#else
#define SWAR 0
#endif

static inline uint64_t zero_bytes(uint64_t x)
{
    return (x - ONES) & ~x & HIGHS;
}

static inline uint64_t less_bytes(uint64_t x, unsigned n)
{
    return (x - ONES * n) & ~x & HIGHS;
}

/* End of the value starting at p: the next ' ' or '\r', or e. */
static inline const char *value_end(const char *p, const char *e)
{
#if SWAR
    while (e - p >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        uint64_t hit = zero_bytes(w ^ (ONES * ' ')) | zero_bytes(w ^ (ONES * '\r'));
        if (hit)
            return p + (__builtin_ctzll(hit) >> 3);
        p += 8;
    }
#endif
    while (p < e && *p != ' ' && *p != '\r')
        p++;
    return p;
}

/* The next byte of [p, e) that is_space, or e. Candidates are bytes below 14 or ' ';
 * a control byte below '\t' is not a space, so the search goes on after it. */
static inline const char *space_at(const char *p, const char *e)
{
#if SWAR
    while (e - p >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        uint64_t hit = less_bytes(w, 14) | zero_bytes(w ^ (ONES * ' '));
        if (hit) {
            const char *c = p + (__builtin_ctzll(hit) >> 3);
            if (is_space(*c))
                return c;
            p = c + 1;
            continue;
        }
        p += 8;
    }
#endif
    while (p < e && !is_space(*p))
        p++;
    return p;
}

/* The next byte of [p, e) that is not a space, or e (spaces between tokens are short). */
static inline const char *skip_spaces(const char *p, const char *e)
{
    while (p < e && is_space(*p))
        p++;
    return p;
}

/* 1 for the bytes a key may hold: [a-z0-9_]. */
static unsigned char KEY_BYTE[256];

static void init_key_bytes(void)
{
    for (int c = 'a'; c <= 'z'; c++)
        KEY_BYTE[c] = 1;
    for (int c = '0'; c <= '9'; c++)
        KEY_BYTE[c] = 1;
    KEY_BYTE['_'] = 1;
}

/* 1 when s[0:n] is ASCII: the words OR-ed together, one test at the end. */
static inline int all_ascii(const unsigned char *s, size_t n)
{
    uint64_t acc = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        acc |= w;
    }
    for (; i < n; i++)
        acc |= s[i];
    return !(acc & HIGHS);
}

static int starts_with(const char *p, const char *e, const char *lit, size_t n)
{
    return (size_t)(e - p) >= n && memcmp(p, lit, n) == 0;
}

/* 1 when s[0:n] is valid UTF-8 (RFC 3629: no overlongs, surrogates or > U+10FFFF). */
static int valid_utf8(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        if (i + 8 <= n) { /* ASCII fast path, a word at a time */
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (!(w & 0x8080808080808080ULL)) {
                i += 8;
                continue;
            }
        }
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t k;
        unsigned lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF)
            k = 1;
        else if (c >= 0xE0 && c <= 0xEF) {
            k = 2;
            if (c == 0xE0)
                lo = 0xA0;
            if (c == 0xED)
                hi = 0x9F;
        }
        else if (c >= 0xF0 && c <= 0xF4) {
            k = 3;
            if (c == 0xF0)
                lo = 0x90;
            if (c == 0xF4)
                hi = 0x8F;
        }
        else
            return 0;
        if (i + k >= n)
            return 0;
        if (s[i + 1] < lo || s[i + 1] > hi)
            return 0;
        for (size_t j = 2; j <= k; j++)
            if (s[i + j] < 0x80 || s[i + j] > 0xBF)
                return 0;
        i += k + 1;
    }
    return 1;
}

static const double POW10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Parse s[0:n] as a whole decimal number (as Python's float() and Arrow's cast accept:
 * sign, digits, point, exponent, inf, nan; no hex, no spaces). 0 on failure. */
static inline int parse_number(const char *s, size_t n, locale_t c_locale, double *out)
{
    if (n == 0)
        return 0;
    /* Fast path: [-+]digits[.digits], at most 19 digits (no overflow), mantissa <= 2^53,
     * at most 22 decimals. Longer spellings take the general path: both round correctly. */
    const char *q = s, *stop = s + n;
    int neg = 0;
    if (*q == '-' || *q == '+') {
        neg = *q == '-';
        q++;
    }
    uint64_t m = 0;
    const char *int_start = q;
    while (q < stop && (unsigned char)(*q - '0') < 10)
        m = m * 10 + (uint64_t)(*q++ - '0');
    size_t digits = (size_t)(q - int_start), frac = 0;
    if (q < stop && *q == '.') {
        const char *frac_start = ++q;
        while (q < stop && (unsigned char)(*q - '0') < 10)
            m = m * 10 + (uint64_t)(*q++ - '0');
        frac = (size_t)(q - frac_start);
        digits += frac;
    }
    if (q == stop && digits > 0 && digits <= 19 && m <= (1ULL << 53) && frac <= 22) {
        double v = (double)m;
        if (frac > 0)
            v /= POW10[frac];
        *out = neg ? -v : v;
        return 1;
    }
    /* General path: strtod in the C locale on a NUL-terminated copy. */
    char tmp[128];
    if (n >= sizeof tmp)
        return 0;
    for (size_t k = 0; k < n; k++)
        if (s[k] == 'x' || s[k] == 'X' || is_space(s[k]) || s[k] == '\0')
            return 0;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    char *end;
    double v = strtod_l(tmp, &end, c_locale);
    if (end != tmp + n)
        return 0;
    *out = v;
    return 1;
}

/* ---- per-trace carry ----------------------------------------------------------------- */

typedef struct {
    double last_time;   /* time of its last line */
    double close_time;  /* latest event=Close time, NaN if none */
    int64_t last_line;
    int64_t n_events;
} TraceInfo;

/* State and event names are few and repeat on every line: a small direct-mapped cache
 * from (length, first and last bytes) to the code seen last there saves hashing the name;
 * a hit is checked against the interned bytes, a miss takes the table. */
#define NAME_CACHE 256

static inline size_t name_slot(const char *name, size_t n)
{
    return (n * 31u + (unsigned char)name[0] * 7u + (unsigned char)name[n - 1]) & (NAME_CACHE - 1);
}

/* ---- the Scanner object --------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    Intern traces;  /* key: u32 file number, u32 len(conn), conn, u8 has_role, role */
    Intern names;
    Buf info;       /* TraceInfo per trace code */
    int32_t close_code; /* code of the name "Close", -1 until seen */
    locale_t c_locale;
    double max_time; /* largest |t| accepted (statemine.parse.timerange.MAX_TIME_S) */
    int busy;
    int64_t next_line; /* 1-based number of the next block's first line */
    uint32_t file_no;  /* number of next_file() calls: part of every trace's key */
    /* per-block output */
    Rows rows;
    Buf extra_row, extra_off; /* int64 row, int64 start/len pairs in extra_text */
    Buf extra_text;
    Buf key; /* scratch */
    int32_t name_cache[NAME_CACHE]; /* name code + 1 by name_slot, 0 = none (a hint) */
    /* first error */
    int err;
    int64_t err_line, err_line2;
    size_t err_tok, err_tok_len; /* token position in the block */
    int err_key;                 /* index in NUMERIC_KEYS or -1 */
    double err_a, err_b;
} Scanner;

static TraceInfo *trace_info(Scanner *self)
{
    return (TraceInfo *)self->info.data;
}

static void set_err(Scanner *self, int code, int64_t line, const char *block, const char *tok, size_t tok_len)
{
    self->err = code;
    self->err_line = line;
    self->err_tok = tok ? (size_t)(tok - block) : 0;
    self->err_tok_len = tok ? tok_len : 0;
}

/* Index of key[0:n] in NUMERIC_KEYS, or -1 (one word compare instead of four memcmp). */
static inline int numeric_key(const char *key, size_t n)
{
    if (n == 4) {
        uint32_t w;
        memcpy(&w, key, 4);
        for (int i = 0; i < N_NUMERIC; i++)
            if (NUMERIC_LEN[i] == 4 && memcmp(&w, NUMERIC_KEYS[i], 4) == 0)
                return i;
    }
    else if (n == 8) {
        uint64_t w;
        memcpy(&w, key, 8);
        for (int i = 0; i < N_NUMERIC; i++)
            if (NUMERIC_LEN[i] == 8 && memcmp(&w, NUMERIC_KEYS[i], 8) == 0)
                return i;
    }
    return -1;
}

/* 1 when key[0:n] is one of the fixed head's keys (t, conn, role, state, event). */
static int fixed_key(const char *key, size_t n)
{
    static const char *const FIXED[] = {"t", "conn", "role", "state", "event"};
    for (int i = 0; i < 5; i++)
        if (strlen(FIXED[i]) == n && memcmp(FIXED[i], key, n) == 0)
            return 1;
    return 0;
}

/* Parse one statemine line; p points after "STATEMINE t=", e at the line's end (no \n).
 * 0 on success; on error self->err is set. */
static int scan_line(Scanner *self, const char *block, const char *p, const char *e, int64_t line_no)
{
    const char *q = value_end(p, e);
    double t;
    if (!parse_number(p, (size_t)(q - p), self->c_locale, &t)) {
        set_err(self, E_NUMBER, line_no, block, p, (size_t)(q - p));
        self->err_key = -2; /* t */
        return -1;
    }
    if (!isfinite(t) || fabs(t) > self->max_time) {
        set_err(self, E_TIME_FINITE, line_no, block, p, (size_t)(q - p));
        return -1;
    }
    p = q;
    if (!starts_with(p, e, " conn=", 6))
        goto malformed;
    const char *conn = p + 6, *conn_end = value_end(conn, e);
    if (conn_end == conn)
        goto malformed;
    p = conn_end;
    const char *role = NULL, *role_end = NULL;
    if (starts_with(p, e, " role=", 6)) {
        role = p + 6;
        role_end = value_end(role, e);
        if (role_end == role)
            goto malformed;
        p = role_end;
    }
    uint8_t kind;
    if (starts_with(p, e, " state=", 7))
        kind = 0;
    else if (starts_with(p, e, " event=", 7))
        kind = 1;
    else
        goto malformed;
    const char *name = p + 7, *name_end = value_end(name, e);
    if (name_end == name)
        goto malformed;
    p = name_end;

    /* the trace's key, hashed now: its slot loads while the trailing tokens are parsed */
    uint32_t clen = (uint32_t)(conn_end - conn);
    uint8_t has_role = role != NULL;
    size_t rlen = role ? (size_t)(role_end - role) : 0;
    self->key.len = 0;
    if (buf_reserve(&self->key, 9 + clen + rlen))
        goto nomem;
    char *k = self->key.data;
    memcpy(k, &self->file_no, 4);
    memcpy(k + 4, &clen, 4);
    memcpy(k + 8, conn, clen);
    k[8 + clen] = (char)has_role;
    if (rlen)
        memcpy(k + 9 + clen, role, rlen);
    self->key.len = 9 + clen + rlen;
    uint64_t key_hash = hash_bytes(self->key.data, self->key.len);
    intern_prefetch(&self->traces, key_hash);

    /* trailing key=value tokens */
    double nums[N_NUMERIC];
    int have[N_NUMERIC] = {0, 0, 0, 0};
    size_t extra_start = self->extra_text.len;
    int n_extra = 0;
    while (p < e) {
        p = skip_spaces(p, e);
        if (p >= e)
            break;
        const char *tok = p;
        p = space_at(p, e);
        /* the key: [a-z0-9_]+ up to the token's first '=' */
        const char *eq = tok;
        while (eq < p && KEY_BYTE[(unsigned char)*eq])
            eq++;
        if (eq == tok || eq == p || *eq != '=') {
            set_err(self, E_NOT_KV, line_no, block, tok, (size_t)(p - tok));
            return -1;
        }
        size_t klen = (size_t)(eq - tok);
        int which = numeric_key(tok, klen);
        if (which >= 0) {
            if (have[which]) {
                set_err(self, E_TWICE, line_no, block, tok, klen);
                return -1;
            }
            if (!parse_number(eq + 1, (size_t)(p - eq - 1), self->c_locale, &nums[which])) {
                set_err(self, E_NUMBER, line_no, block, eq + 1, (size_t)(p - eq - 1));
                self->err_key = which;
                return -1;
            }
            have[which] = 1;
            continue;
        }
        if (fixed_key(tok, klen)) {
            set_err(self, E_OUT_OF_PLACE, line_no, block, tok, klen);
            return -1;
        }
        if ((n_extra && buf_put(&self->extra_text, " ", 1)) || buf_put(&self->extra_text, tok, (size_t)(p - tok)))
            goto nomem;
        n_extra++;
    }

    /* the trace and its carry */
    int added;
    int32_t code = intern_get_hashed(&self->traces, self->key.data, self->key.len, key_hash, &added);
    if (code < 0)
        goto nomem;
    if (added) {
        TraceInfo fresh = {t, NAN, line_no, 0};
        if (buf_put(&self->info, &fresh, sizeof fresh))
            goto nomem;
    }
    TraceInfo *info = &trace_info(self)[code];
    if (t < info->last_time) {
        set_err(self, E_BACKWARDS, line_no, block, p, 0);
        self->err_a = t;
        self->err_b = info->last_time;
        self->err_line2 = info->last_line;
        return -1;
    }
    size_t name_len = (size_t)(name_end - name), slot = name_slot(name, name_len);
    int32_t name_code = self->name_cache[slot] - 1;
    added = 0;
    if (name_code >= 0) {
        size_t start = intern_offset(&self->names, (size_t)name_code);
        if (intern_offset(&self->names, (size_t)name_code + 1) - start != name_len ||
            !bytes_eq(self->names.keys.data + start, name, name_len))
            name_code = -1;
    }
    if (name_code < 0) {
        name_code = intern_get(&self->names, name, name_len, &added);
        if (name_code < 0)
            goto nomem;
        self->name_cache[slot] = name_code + 1;
    }
    if (added && name_end - name == 5 && memcmp(name, "Close", 5) == 0)
        self->close_code = name_code;
    info->last_time = t;
    info->last_line = line_no;
    info->n_events++;
    if (kind == 1 && name_code == self->close_code && !(info->close_time >= t))
        info->close_time = t;

    /* the row */
    if (rows_reserve(&self->rows))
        goto nomem;
    Rows *r = &self->rows;
    int64_t row = (int64_t)r->n;
    r->line[row] = line_no;
    r->time[row] = t;
    r->trace[row] = code;
    r->kind[row] = kind;
    r->name[row] = name_code;
    for (int i = 0; i < N_NUMERIC; i++)
        r->num[i][row] = have[i] ? nums[i] : NAN;
    r->n++;
    if (n_extra) {
        int64_t span[2] = {(int64_t)extra_start, (int64_t)(self->extra_text.len - extra_start)};
        if (buf_put(&self->extra_row, &row, sizeof row) || buf_put(&self->extra_off, span, sizeof span))
            goto nomem;
    }
    return 0;

malformed:
    set_err(self, E_MALFORMED, line_no, block, NULL, 0);
    return -1;
nomem:
    set_err(self, E_NOMEM, line_no, block, NULL, 0);
    return -1;
}

/* Tokenize the lines of block[0:n]; the first is line self->next_line, which ends one past
 * the block's last line (a last line without '\n' counts as a line). */
static void scan_block(Scanner *self, const char *block, size_t n, size_t max_line)
{
    static const char MARKER[] = "STATEMINE t=";
    const size_t mlen = sizeof MARKER - 1;
    size_t pos = 0;
    int64_t line_no = self->next_line;
    while (pos < n) {
        const char *start = block + pos;
        const char *nl = memchr(start, '\n', n - pos);
        const char *end = nl ? nl : block + n;
        if ((size_t)(end - start) > max_line) {
            set_err(self, E_LONG_LINE, line_no, block, NULL, 0);
            return;
        }
        const char *m = starts_with(start, end, MARKER, mlen) ? start : memmem(start, (size_t)(end - start), MARKER, mlen);
        if (m) {
            const char *e = end;
            if (e > start && e[-1] == '\r')
                e--;
            if (!all_ascii((const unsigned char *)start, (size_t)(end - start)) &&
                !valid_utf8((const unsigned char *)start, (size_t)(end - start))) {
                set_err(self, E_NOT_UTF8, line_no, block, NULL, 0);
                return;
            }
            if (scan_line(self, block, m + mlen, e, line_no)) {
                /* keep the whole line (without \n) as the error's token for messages */
                if (self->err == E_MALFORMED || self->err == E_NOT_UTF8) {
                    self->err_tok = (size_t)(start - block);
                    self->err_tok_len = (size_t)(end - start);
                }
                return;
            }
        }
        pos = (size_t)(end - block) + 1;
        line_no++;
    }
    self->next_line = line_no;
}

static void reset_rows(Scanner *self)
{
    self->rows.n = 0;
    self->extra_row.len = self->extra_off.len = self->extra_text.len = 0;
}

static void reset_err(Scanner *self)
{
    self->err = E_NONE;
    self->err_key = -1;
}

static PyObject *bytes_of_array(const void *data, size_t n)
{
    return PyBytes_FromStringAndSize(n ? (const char *)data : "", (Py_ssize_t)n);
}

static PyObject *bytes_of(const Buf *b)
{
    return bytes_of_array(b->data, b->len);
}

/* The pending rows' extra key=value text, a list of str (one per row in extra_row). */
static PyObject *columns_of_extra(Scanner *self)
{
    Py_ssize_t n_extra = (Py_ssize_t)(self->extra_row.len / sizeof(int64_t));
    PyObject *texts = PyList_New(n_extra);
    const int64_t *span = (const int64_t *)self->extra_off.data;
    for (Py_ssize_t i = 0; texts && i < n_extra; i++) {
        PyObject *s = PyUnicode_DecodeUTF8(self->extra_text.data + span[2 * i], (Py_ssize_t)span[2 * i + 1],
                                           "strict");
        if (!s) {
            Py_CLEAR(texts);
            break;
        }
        PyList_SET_ITEM(texts, i, s);
    }
    return texts;
}

/* The pending rows as a dict of columns (bytes of native arrays, extra_text a list of str). */
static PyObject *columns_of(Scanner *self)
{
    PyObject *texts = columns_of_extra(self);
    if (!texts)
        return NULL;
    const Rows *r = &self->rows;
    return Py_BuildValue(
        "{s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N}", "line", bytes_of_array(r->line, r->n * 8), "time",
        bytes_of_array(r->time, r->n * 8), "trace", bytes_of_array(r->trace, r->n * 4), "kind",
        bytes_of_array(r->kind, r->n), "name", bytes_of_array(r->name, r->n * 4), "cwnd",
        bytes_of_array(r->num[0], r->n * 8), "inflight", bytes_of_array(r->num[1], r->n * 8), "ssthresh",
        bytes_of_array(r->num[2], r->n * 8), "srtt", bytes_of_array(r->num[3], r->n * 8), "extra_row",
        bytes_of(&self->extra_row), "extra_text", texts);
}

/* The dict describing the scanner's error in `buf` (the block or file it scanned): what
   Python's _input_error reads. A new reference, or NULL with an exception set. */
static PyObject *error_detail(const Scanner *self, const char *buf)
{
    PyObject *tok = PyBytes_FromStringAndSize(buf + self->err_tok, (Py_ssize_t)self->err_tok_len);
    if (!tok)
        return NULL;
    return Py_BuildValue("{s:i,s:L,s:N,s:i,s:d,s:d,s:L}", "error", self->err, "line",
                         (long long)self->err_line, "token", tok, "key", self->err_key, "time",
                         self->err_a, "previous_time", self->err_b, "previous_line",
                         (long long)self->err_line2);
}

/* Scan one block into the pending rows (kept ones before it unless `fresh`). Returns 1 and
 * sets *err_out to the error dict (or NULL with an exception) for a bad line, 0 when done,
 * -1 with an exception set. */
static int scan_view(Scanner *self, PyObject *args, int fresh, PyObject **err_out)
{
    Py_buffer view;
    Py_ssize_t max_line;
    *err_out = NULL;
    if (!PyArg_ParseTuple(args, "y*n", &view, &max_line))
        return -1;
    if (self->busy) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_RuntimeError, "Scanner.scan is not reentrant");
        return -1;
    }
    self->busy = 1;
    if (fresh)
        reset_rows(self);
    reset_err(self);
    Py_BEGIN_ALLOW_THREADS
    scan_block(self, (const char *)view.buf, (size_t)view.len, max_line < 0 ? (size_t)-1 : (size_t)max_line);
    Py_END_ALLOW_THREADS
    self->busy = 0;

    int status = 0;
    if (self->err == E_NOMEM) {
        PyErr_NoMemory();
        status = -1;
    }
    else if (self->err != E_NONE) {
        *err_out = error_detail(self, (const char *)view.buf);
        status = *err_out ? 1 : -1;
    }
    PyBuffer_Release(&view);
    return status;
}

/* Scanner.scan(block, max_line_bytes) -> dict of columns, or a dict describing an error. */
static PyObject *Scanner_scan(Scanner *self, PyObject *args)
{
    PyObject *err;
    int status = scan_view(self, args, 1, &err);
    if (status)
        return status > 0 ? err : NULL;
    return columns_of(self);
}

/* Scanner.feed(block, max_line_bytes) -> None, or a dict describing an error: the block's
 * rows join the pending ones (Scanner.take returns them). */
static PyObject *Scanner_feed(Scanner *self, PyObject *args)
{
    PyObject *err;
    int status = scan_view(self, args, 0, &err);
    if (status)
        return status > 0 ? err : NULL;
    Py_RETURN_NONE;
}

/* Scanner.take() -> dict of columns of the rows fed since the last take. */
static PyObject *Scanner_take(Scanner *self, PyObject *Py_UNUSED(unused))
{
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "Scanner is scanning");
        return NULL;
    }
    PyObject *out = columns_of(self);
    if (out)
        reset_rows(self);
    return out;
}

/* Scanner.next_file(): the next block starts a new file (line 1; its connections are new
 * traces). */
static PyObject *Scanner_next_file(Scanner *self, PyObject *Py_UNUSED(unused))
{
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "Scanner is scanning");
        return NULL;
    }
    self->file_no++;
    self->next_line = 1;
    Py_RETURN_NONE;
}

/* Scanner.info() -> the packed per-trace records of Scanner.traces() alone. */
static PyObject *Scanner_info(Scanner *self, PyObject *Py_UNUSED(unused))
{
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "Scanner is scanning");
        return NULL;
    }
    return bytes_of(&self->info);
}

static PyObject *decode_key(const Intern *t, size_t code, size_t skip, size_t n)
{
    return PyUnicode_DecodeUTF8(t->keys.data + intern_offset(t, code) + skip, (Py_ssize_t)n, "strict");
}

/* Scanner.names() -> list of str, index = name code. */
static PyObject *Scanner_names(Scanner *self, PyObject *Py_UNUSED(unused))
{
    if (self->busy) { /* another thread is inside scan(), without the GIL */
        PyErr_SetString(PyExc_RuntimeError, "Scanner is scanning");
        return NULL;
    }
    PyObject *out = PyList_New((Py_ssize_t)self->names.n);
    for (size_t i = 0; out && i < self->names.n; i++) {
        size_t len = intern_offset(&self->names, i + 1) - intern_offset(&self->names, i);
        PyObject *s = decode_key(&self->names, i, 0, len);
        if (!s) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, (Py_ssize_t)i, s);
    }
    return out;
}

/* Scanner.traces() -> (conns, roles, info bytes): roles hold None when the lines had none;
 * info holds per trace (last_time f8, close_time f8, last_line i8, n_events i8). */
static PyObject *Scanner_traces(Scanner *self, PyObject *Py_UNUSED(unused))
{
    if (self->busy) { /* another thread is inside scan(), without the GIL */
        PyErr_SetString(PyExc_RuntimeError, "Scanner is scanning");
        return NULL;
    }
    Py_ssize_t n = (Py_ssize_t)self->traces.n;
    PyObject *conns = PyList_New(n), *roles = PyList_New(n);
    if (!conns || !roles)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *k = self->traces.keys.data + intern_offset(&self->traces, (size_t)i);
        size_t total = intern_offset(&self->traces, (size_t)i + 1) - intern_offset(&self->traces, (size_t)i);
        uint32_t clen;
        memcpy(&clen, k + 4, 4);
        PyObject *c = decode_key(&self->traces, (size_t)i, 8, clen);
        if (!c)
            goto fail;
        PyList_SET_ITEM(conns, i, c);
        PyObject *r;
        if (k[8 + clen]) {
            r = decode_key(&self->traces, (size_t)i, 9 + clen, total - 9 - clen);
            if (!r)
                goto fail;
        }
        else {
            r = Py_None;
            Py_INCREF(r);
        }
        PyList_SET_ITEM(roles, i, r);
    }
    return Py_BuildValue("(NNN)", conns, roles, bytes_of(&self->info));
fail:
    Py_XDECREF(conns);
    Py_XDECREF(roles);
    return NULL;
}

static int Scanner_init(Scanner *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"max_time", NULL};
    double max_time = HUGE_VAL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|d", kwlist, &max_time))
        return -1;
    if (!(max_time >= 0)) {
        PyErr_SetString(PyExc_ValueError, "max_time must be >= 0");
        return -1;
    }
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "Scanner is scanning");
        return -1;
    }
    /* __init__ may run twice: start from empty tables */
    intern_free(&self->traces);
    intern_free(&self->names);
    self->info.len = 0;
    if (self->c_locale)
        freelocale(self->c_locale);
    self->c_locale = (locale_t)0;
    if (intern_init(&self->traces) || intern_init(&self->names)) {
        PyErr_NoMemory();
        return -1;
    }
    memset(self->name_cache, 0, sizeof self->name_cache);
    self->close_code = -1;
    self->max_time = max_time;
    self->next_line = 1;
    self->file_no = 0;
    self->c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    if (!self->c_locale) {
        PyErr_SetString(PyExc_OSError, "cannot create the C locale");
        return -1;
    }
    return 0;
}

static void Scanner_dealloc(Scanner *self)
{
    intern_free(&self->traces);
    intern_free(&self->names);
    Buf *bufs[] = {&self->info, &self->extra_row, &self->extra_off, &self->extra_text, &self->key};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        buf_free(bufs[i]);
    rows_free(&self->rows);
    if (self->c_locale)
        freelocale(self->c_locale);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* ---- Scanner.feed_files: many small files opened, read and scanned in one call -----------
 *
 * Issue 29: a folder of 2,000 small logs cost about 12 us of Python per file (open, read,
 * sniff, feed). feed_files does that per-file work in C without the GIL: each file (paths
 * encoded FF_BATCH at a time) is opened, read whole (it must be under FF_HEAD bytes and at most
 * chunk_bytes), sniffed (not gzip, not Parquet, and, when asked, holding the marker) and fed
 * as one block, as statemine_log.scan_files feeds a small file. It stops before the first
 * file it cannot take that way (the Python side reads that one) and after the file whose
 * rows reach max_rows. */

enum { FF_OK = 0, FF_FALLBACK, FF_ERROR, FF_NO_LINES };
#define FF_BATCH 64   /* at most this many paths encoded (with the GIL), then read and scanned without it */
#define FF_HEAD 65536 /* = statemine_log.SNIFF_BYTES: a file this long is not read whole */

/* The folder of the last file opened, kept open: the files of one folder are opened relative
 * to it (openat), so the kernel looks up the folder's path once, not once a file (about
 * 0.5 us a file for /a/b/c/name). */
typedef struct {
    int fd;      /* -1: none */
    char *path;  /* the folder as the file names spell it (malloc'd) */
    size_t len;
} FFDir;

static void ffdir_close(FFDir *d)
{
    if (d->fd >= 0)
        close(d->fd);
    free(d->path);
    d->fd = -1;
    d->path = NULL;
    d->len = 0;
}

/* The file descriptor to open `path` relative to and the name to open there: the folder
 * part's (opened with O_PATH, kept in d for the next file) and the last part, or AT_FDCWD
 * and path itself when it names no folder or the folder cannot be opened (then open(2)
 * says why the file cannot). */
static int ffdir_at(FFDir *d, const char *path, const char **name)
{
    const char *slash = strrchr(path, '/');
    *name = path;
    if (!slash || !slash[1])
        return AT_FDCWD;
    size_t len = slash == path ? 1 : (size_t)(slash - path); /* "/name": the root */
    if (!(d->fd >= 0 && d->len == len && memcmp(d->path, path, len) == 0)) {
        ffdir_close(d);
        char *dir = malloc(len + 1);
        if (!dir)
            return AT_FDCWD;
        memcpy(dir, path, len);
        dir[len] = 0;
        int fd;
        do
            fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        while (fd < 0 && errno == EINTR);
        if (fd < 0) {
            free(dir);
            return AT_FDCWD;
        }
        d->fd = fd;
        d->path = dir;
        d->len = len;
    }
    *name = slash + 1;
    return d->fd;
}

/* The descriptors of files read and not yet closed: closed together (ffclose_flush), each
 * run of consecutive numbers in one close_range(2) (every number of such a run is one of
 * these, so no other descriptor is closed), the rest one by one. Up to FF_BATCH files cost
 * a few system calls instead of one a file (about 0.3 us a file); another thread's
 * descriptor among the numbers only splits a run. */
typedef struct {
    int fd[FF_BATCH];
    int n;
} FFClose;

static void ffclose_flush(FFClose *c)
{
    int *fd = c->fd, n = c->n;
    for (int i = 1; i < n; i++) { /* insertion sort: they come mostly ascending */
        int v = fd[i], j = i;
        for (; j > 0 && fd[j - 1] > v; j--)
            fd[j] = fd[j - 1];
        fd[j] = v;
    }
    for (int i = 0; i < n;) {
        int j = i + 1;
        while (j < n && fd[j] == fd[j - 1] + 1)
            j++;
#ifdef SYS_close_range
        if (j - i > 1 && syscall(SYS_close_range, (unsigned)fd[i], (unsigned)fd[j - 1], 0) == 0) {
            i = j;
            continue;
        }
#endif
        for (; i < j; i++)
            close(fd[i]);
    }
    c->n = 0;
}

static void ffclose_add(FFClose *c, int fd)
{
    if (c->n == FF_BATCH)
        ffclose_flush(c);
    c->fd[c->n++] = fd;
}

/* Read the file at `path` into buf (at most cap bytes): 0 and *n, or -1 when it cannot be
 * opened or read; the descriptor goes to pending (closed with the batch's others). *n == cap
 * means there may be more. Read until read(2) returns 0: a short read is not taken as the
 * end (FUSE and network file systems may return short reads mid-file; the read that finds
 * the end costs about 0.3 us a file). */
static int ff_read(FFDir *dir, const char *path, char *buf, size_t cap, size_t *n, FFClose *pending)
{
    const char *name;
    int at = ffdir_at(dir, path, &name), fd;
    do
        fd = openat(at, name, O_RDONLY | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return -1;
    size_t got = 0;
    while (got < cap) {
        ssize_t r = read(fd, buf + got, cap - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            ffclose_add(pending, fd);
            return -1;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    ffclose_add(pending, fd);
    *n = got;
    return 0;
}

/* Whether feed_files takes a file whose first len bytes (all of it) are buf. */
static int ff_takes(const char *buf, size_t len, int sniff)
{
    static const char MARKER[] = "STATEMINE t=";
    if (len >= 2 && (unsigned char)buf[0] == 0x1f && (unsigned char)buf[1] == 0x8b)
        return 0; /* gzip: decompressed on the Python side */
    if (len >= 4 && memcmp(buf, "PAR1", 4) == 0)
        return 0; /* Parquet: never sniffed as statemine lines */
    return !sniff || memmem(buf, len, MARKER, sizeof MARKER - 1) != NULL;
}

/* Feed the m files of enc (bytes paths) without the GIL: per file fed, its first trace code
 * and size go to starts and sizes, its bytes to kept (when not NULL: for the caller's
 * sha256, so the file is not read again), and *fed counts it. Stops before a file for the
 * Python side (FF_FALLBACK; *head_len: its bytes in buf, -1 when it could not be read), at
 * a file with a bad line (FF_ERROR; self->err) or without a line (FF_NO_LINES), or after
 * the file whose rows reach max_rows or whose bytes bring kept to chunk bytes (*full). */
static int ff_batch(Scanner *self, FFDir *dir, FFClose *pending, PyObject *const *enc, Py_ssize_t m, char *buf,
                    size_t max_line, size_t chunk, int sniff, size_t max_rows, Buf *starts, Buf *sizes, Buf *kept,
                    Py_ssize_t *fed, Py_ssize_t *head_len, int *full)
{
    for (Py_ssize_t k = 0; k < m; k++) {
        size_t len;
        if (ff_read(dir, PyBytes_AS_STRING(enc[k]), buf, FF_HEAD, &len, pending))
            return FF_FALLBACK;
        if (len >= FF_HEAD || len > chunk || !ff_takes(buf, len, sniff)) {
            *head_len = (Py_ssize_t)len; /* handed to the Python side: not read again */
            return FF_FALLBACK;
        }
        if (self->traces.n) { /* as next_file() */
            self->file_no++;
            self->next_line = 1;
        }
        int64_t first = (int64_t)self->traces.n, size = (int64_t)len;
        if (buf_put(starts, &first, sizeof first) || buf_put(sizes, &size, sizeof size)) {
            self->err = E_NOMEM;
            return FF_ERROR;
        }
        scan_block(self, buf, len, max_line);
        if (self->err != E_NONE)
            return FF_ERROR;
        if ((int64_t)self->traces.n == first)
            return FF_NO_LINES;
        if (kept && buf_put(kept, buf, len)) {
            self->err = E_NOMEM;
            return FF_ERROR;
        }
        ++*fed;
        if (self->rows.n >= max_rows || (kept && kept->len >= chunk)) {
            *full = 1;
            return FF_OK;
        }
    }
    return FF_OK;
}

/* Scanner.feed_files(files, start, max_line_bytes, chunk_bytes, sniff, max_rows, keep=False)
 *   -> (next, status, starts, sizes, detail, kept)
 * files[start:] (str, bytes or os.PathLike) fed in order, as next_file() + feed() of each
 * whole file. next: the first file not fed; status: FF_OK (fed up to next: the list's end,
 * or max_rows reached), FF_FALLBACK (files[next] is for the Python side: it cannot be
 * opened or read, is too long, gzip, Parquet, or, with sniff, holds no marker; detail: its
 * first FF_HEAD bytes, all of it when shorter, or None when it could not be read), FF_ERROR
 * (files[next] has a bad line: detail is the dict feed() gives), FF_NO_LINES (files[next]
 * holds no statemine line); starts, sizes: per file fed, the first trace code and its bytes
 * (int64); kept (with keep; else None): the bytes of the files fed, one after another (a
 * call stops once they reach chunk_bytes, so they stay bounded). */
static PyObject *Scanner_feed_files(Scanner *self, PyObject *args)
{
    PyObject *files, *enc[FF_BATCH], *out = NULL;
    Py_ssize_t start, max_line, chunk, max_rows;
    int sniff, keep = 0;
    if (!PyArg_ParseTuple(args, "Onnnpn|p", &files, &start, &max_line, &chunk, &sniff, &max_rows, &keep))
        return NULL;
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "Scanner is scanning");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(files, "files must be a sequence");
    if (!seq)
        return NULL;
    Py_ssize_t n_files = PySequence_Fast_GET_SIZE(seq), at = start, head_len = -1;
    Buf starts = {0}, sizes = {0}, kept = {0};
    FFDir dir = {-1, NULL, 0};
    FFClose pending = {.n = 0};
    char *buf = NULL;
    if (start < 0 || start > n_files) {
        PyErr_SetString(PyExc_IndexError, "start out of range");
        goto done;
    }
    if (!(buf = malloc(FF_HEAD))) {
        PyErr_NoMemory();
        goto done;
    }
    int status = FF_OK, full = 0;
    Py_ssize_t batch = 1; /* doubling to FF_BATCH: a call that stops at once encodes one path */
    while (status == FF_OK && !full && at < n_files) {
        Py_ssize_t m = 0, fed = 0;
        int bad_name = 0;
        while (m < batch && at + m < n_files) {
            if (!PyUnicode_FSConverter(PySequence_Fast_GET_ITEM(seq, at + m), &enc[m])) {
                if (!PyErr_ExceptionMatches(PyExc_ValueError)) { /* not a path at all */
                    while (m > 0)
                        Py_DECREF(enc[--m]);
                    goto done;
                }
                PyErr_Clear(); /* a NUL in the name: the Python side says what os.open says */
                bad_name = 1;
                break;
            }
            m++;
        }
        self->busy = 1;
        reset_err(self);
        Py_BEGIN_ALLOW_THREADS
        status = ff_batch(self, &dir, &pending, enc, m, buf, max_line < 0 ? (size_t)-1 : (size_t)max_line,
                          chunk < 0 ? 0 : (size_t)chunk, sniff, max_rows < 0 ? 0 : (size_t)max_rows, &starts, &sizes,
                          keep ? &kept : NULL, &fed, &head_len, &full);
        ffclose_flush(&pending); /* every file of the batch closed before the GIL is taken */
        Py_END_ALLOW_THREADS
        self->busy = 0;
        while (m > 0)
            Py_DECREF(enc[--m]);
        at += fed;
        if (status == FF_OK && !full && bad_name)
            status = FF_FALLBACK;
        batch = batch < FF_BATCH / 2 ? 2 * batch : FF_BATCH;
    }
    if (self->err == E_NOMEM) {
        PyErr_NoMemory();
        goto done;
    }
    PyObject *detail;
    if (status == FF_ERROR)
        detail = error_detail(self, buf);
    else if (status == FF_FALLBACK && head_len >= 0)
        detail = PyBytes_FromStringAndSize(buf, head_len);
    else {
        detail = Py_None;
        Py_INCREF(detail);
    }
    PyObject *data = keep ? bytes_of(&kept) : Py_NewRef(Py_None);
    if (detail && data)
        out = Py_BuildValue("(niNNNN)", at, status, bytes_of(&starts), bytes_of(&sizes), detail, data);
    else {
        Py_XDECREF(detail);
        Py_XDECREF(data);
    }
done:
    Py_DECREF(seq);
    ffdir_close(&dir);
    free(buf);
    buf_free(&starts);
    buf_free(&sizes);
    buf_free(&kept);
    return out;
}

static PyMethodDef Scanner_methods[] = {
    {"scan", (PyCFunction)Scanner_scan, METH_VARARGS,
     "scan(block, max_line_bytes: int) -> dict\n\n"
     "Columns of the statemine lines of the next block of whole lines (bytes of native\n"
     "arrays), or a dict with an 'error' code for the first bad line."},
    {"feed", (PyCFunction)Scanner_feed, METH_VARARGS,
     "feed(block, max_line_bytes: int) -> None | dict\n\n"
     "Scan the next block into the pending rows (take() returns them); a dict with an\n"
     "'error' code for the first bad line."},
    {"take", (PyCFunction)Scanner_take, METH_NOARGS, "take() -> dict: the pending rows' columns, as scan()."},
    {"feed_files", (PyCFunction)Scanner_feed_files, METH_VARARGS,
     "feed_files(files, start, max_line_bytes, chunk_bytes, sniff, max_rows, keep=False)\n"
     "    -> (next, status, starts, sizes, detail, kept)\n\n"
     "Open, read and feed whole small files from files[start] on without the GIL (issue 29)."},
    {"next_file", (PyCFunction)Scanner_next_file, METH_NOARGS,
     "next_file(): the next block starts another file (line 1, new traces)."},
    {"info", (PyCFunction)Scanner_info, METH_NOARGS, "info() -> bytes: the per-trace records of traces()."},
    {"names", (PyCFunction)Scanner_names, METH_NOARGS, "names() -> list[str], indexed by name code."},
    {"traces", (PyCFunction)Scanner_traces, METH_NOARGS,
     "traces() -> (conns, roles, info): per trace code; info packs last_time, close_time, last_line, n_events."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef Scanner_members[] = {
    {"next_line", T_LONGLONG, offsetof(Scanner, next_line), READONLY,
     "1-based number of the line the next block starts with."},
    {"n_traces", T_PYSSIZET, offsetof(Scanner, traces) + offsetof(Intern, n), READONLY,
     "Number of traces seen (all files)."},
    {"n_rows", T_PYSSIZET, offsetof(Scanner, rows) + offsetof(Rows, n), READONLY,
     "Number of rows fed and not yet taken."},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "statemine.parse._linescan.Scanner",
    .tp_basicsize = sizeof(Scanner),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Tokenizer of statemine log lines; feed it a file's blocks in order.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Scanner_init,
    .tp_dealloc = (destructor)Scanner_dealloc,
    .tp_methods = Scanner_methods,
    .tp_members = Scanner_members,
};

/* ---- PairSums: running sums per int64 key (statemine.stats.sums) --------------------------
 *
 * Open addressing (linear probing, Fibonacci hashing) from a key to its slot; slots are
 * numbered in order of the keys' first arrival, and each slot holds n_values float64 sums.
 * Each sum adds its values one by one in arrival order (the order numpy's bincount adds a
 * whole chunk in), so feeding the values block by block gives the sums of one pass over all
 * of them, bit for bit. The loop runs without the GIL. */

#define PS_MAX_VALUES 4

typedef struct {
    PyObject_HEAD
    int n_values;
    int busy;
    Py_ssize_t n, cap;          /* slots used, allocated */
    double **segs;              /* per slot a record of 1 + n_values words: its key (the
                                 * int64's bytes), then its sums (one cache line per add),
                                 * PS_SEG records a segment: growth adds a segment and
                                 * never copies or holds a block twice */
    size_t n_segs;
    uint32_t *table;            /* slot + 1 per cell, 0 when empty */
    size_t mask;                /* cells - 1 (a power of two minus one), 0 without a table */
    int bits;                   /* log2(cells) */
} PairSums;

static void *ps_zeroed(size_t size)
{
    return calloc(size, 1);
}

static void ps_release(void *p, size_t size)
{
    (void)size;
    free(p);
}

static size_t ps_cell(int64_t key, int bits)
{
    return (size_t)(((uint64_t)key * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - bits));
}

/* Words per slot record. */
static inline size_t ps_stride(const PairSums *self)
{
    return (size_t)self->n_values + 1;
}

#define PS_SEG_BITS 12
#define PS_SEG ((size_t)1 << PS_SEG_BITS)

static inline double *ps_rec(const PairSums *self, size_t slot)
{
    return self->segs[slot >> PS_SEG_BITS] + (slot & (PS_SEG - 1)) * ps_stride(self);
}

static inline int64_t ps_key(const PairSums *self, size_t slot)
{
    int64_t key;
    memcpy(&key, ps_rec(self, slot), 8);
    return key;
}

static void ps_free(PairSums *self)
{
    for (size_t i = 0; i < self->n_segs; i++)
        ps_release(self->segs[i], PS_SEG * 8 * ps_stride(self));
    ps_release(self->segs, self->n_segs * sizeof *self->segs);
    self->segs = NULL;
    self->n_segs = 0;
    ps_release(self->table, self->table ? (self->mask + 1) * sizeof *self->table : 0);
    self->table = NULL;
    self->n = self->cap = 0;
    self->mask = 0;
    self->bits = 0;
}

/* Room for one more slot; 0, or -1 when out of memory (nothing changed). */
static int ps_reserve(PairSums *self)
{
    if (self->n < self->cap && (size_t)(self->n + 1) * 10 <= (self->mask + 1) * 7)
        return 0;
    if (self->n >= self->cap) {
        Py_ssize_t cap = self->cap + (Py_ssize_t)PS_SEG;
        if (cap >= (Py_ssize_t)UINT32_MAX)
            return -1;
        double **segs = realloc(self->segs, (self->n_segs + 1) * sizeof *segs);
        if (!segs) /* nothing changed */
            return -1;
        self->segs = segs;
        if (!(segs[self->n_segs] = malloc(PS_SEG * 8 * ps_stride(self))))
            return -1;
        self->n_segs++;
        self->cap = cap;
    }
    if ((size_t)(self->n + 1) * 10 > (self->mask + 1) * 7 || !self->table) {
        int bits = self->bits ? self->bits + 1 : 12;
        size_t cells = (size_t)1 << bits;
        uint32_t *table = ps_zeroed(cells * sizeof *table);
        if (!table)
            return -1;
        for (Py_ssize_t s = 0; s < self->n; s++) {
            size_t h = ps_cell(ps_key(self, (size_t)s), bits);
            while (table[h])
                h = (h + 1) & (cells - 1);
            table[h] = (uint32_t)(s + 1);
        }
        ps_release(self->table, self->table ? (self->mask + 1) * sizeof *self->table : 0);
        self->table = table;
        self->mask = cells - 1;
        self->bits = bits;
    }
    return 0;
}

/* Loads ahead for ps_add (the keys arrive in no order: each add misses the cache):
 * PS_FAR entries ahead the key's first cell, PS_NEAR ahead the record that cell names (far
 * enough for memory under load: 16/8 took 0.19 s, 96/48 0.13 s for 1e7 adds, best of 7).
 * Hints only; what is added and in which order is unchanged. */
#define PS_FAR 96
#define PS_NEAR 48

static inline void ps_prefetch(const PairSums *self, const int64_t *keys, Py_ssize_t j, Py_ssize_t m)
{
#if defined(__GNUC__)
    if (j + PS_FAR < m)
        __builtin_prefetch(&self->table[ps_cell(keys[j + PS_FAR], self->bits)]);
    if (j + PS_NEAR < m) {
        uint32_t s = self->table[ps_cell(keys[j + PS_NEAR], self->bits)];
        if (s) {
            const double *rec = ps_rec(self, s - 1);
            __builtin_prefetch(rec);
            __builtin_prefetch(rec + ps_stride(self) - 1); /* a record may cross a line */
        }
    }
#else
    (void)self;
    (void)keys;
    (void)j;
    (void)m;
#endif
}

/* Add the m entries; values[i] NULL counts. 0, or -1 when out of memory (entries before the
 * failing one added). */
static int ps_add(PairSums *self, const int64_t *keys, const double *const *values, Py_ssize_t m)
{
    for (Py_ssize_t j = 0; j < m; j++) {
        ps_prefetch(self, keys, j, m);
        int64_t key = keys[j];
        size_t h = ps_cell(key, self->bits);
        uint32_t s;
        while ((s = self->table[h]) && ps_key(self, s - 1) != key)
            h = (h + 1) & self->mask;
        if (!s) {
            if ((size_t)(self->n + 1) * 10 > (self->mask + 1) * 7 || self->n >= self->cap) {
                if (ps_reserve(self))
                    return -1;
                h = ps_cell(key, self->bits);
                while (self->table[h])
                    h = (h + 1) & self->mask;
            }
            s = (uint32_t)(++self->n);
            self->table[h] = s;
            double *rec = ps_rec(self, s - 1);
            memcpy(rec, &key, 8);
            for (int i = 0; i < self->n_values; i++)
                rec[1 + i] = 0.0;
        }
        double *sums = ps_rec(self, s - 1) + 1;
        for (int i = 0; i < self->n_values; i++)
            sums[i] += values[i] ? values[i][j] : 1.0;
    }
    return 0;
}

static int PairSums_init(PairSums *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"n_values", NULL};
    int n_values;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "i", kwlist, &n_values))
        return -1;
    if (n_values < 1 || n_values > PS_MAX_VALUES) {
        PyErr_Format(PyExc_ValueError, "n_values must be 1 to %d", PS_MAX_VALUES);
        return -1;
    }
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "PairSums is adding");
        return -1;
    }
    ps_free(self);
    self->n_values = n_values;
    if (ps_reserve(self)) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static int ps_view(PyObject *obj, Py_buffer *view, const char *what, char kind, int writable)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)))
        return -1;
    const char *f = view->format ? view->format : "B";
    if (*f == '<' || *f == '=' || *f == '@')
        f++;
    int ok = view->itemsize == 8 && f[1] == '\0' &&
             (kind == 'd' ? f[0] == 'd' : (f[0] == 'q' || f[0] == 'l'));
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "%s must be a contiguous %s array", what,
                     kind == 'd' ? "float64" : "int64");
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* PairSums.add(keys, values): values[i] is a float64 array as long as keys, or None (1 each). */
static PyObject *PairSums_add(PairSums *self, PyObject *args)
{
    PyObject *keys_obj, *values;
    if (!PyArg_ParseTuple(args, "OO", &keys_obj, &values))
        return NULL;
    if (!self->table) {
        PyErr_SetString(PyExc_RuntimeError, "PairSums is not initialized");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(values, "values must be a sequence");
    if (!seq)
        return NULL;
    if (PySequence_Fast_GET_SIZE(seq) != self->n_values) {
        PyErr_Format(PyExc_ValueError, "values must hold %d entries", self->n_values);
        Py_DECREF(seq);
        return NULL;
    }
    Py_buffer kview, vviews[PS_MAX_VALUES];
    const double *vdata[PS_MAX_VALUES] = {NULL};
    int got = 0, ok = 0;
    if (ps_view(keys_obj, &kview, "keys", 'q', 0)) {
        Py_DECREF(seq);
        return NULL;
    }
    Py_ssize_t m = kview.len / 8;
    for (; got < self->n_values; got++) {
        PyObject *v = PySequence_Fast_GET_ITEM(seq, got);
        if (v == Py_None)
            continue;
        if (ps_view(v, &vviews[got], "values", 'd', 0))
            goto done;
        vdata[got] = (const double *)vviews[got].buf;
        if (vviews[got].len / 8 != m) {
            PyErr_SetString(PyExc_ValueError, "values must be as long as keys");
            got++;
            goto done;
        }
    }
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "PairSums.add is not reentrant");
        goto done;
    }
    self->busy = 1;
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = ps_add(self, (const int64_t *)kview.buf, vdata, m);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    if (status)
        PyErr_NoMemory();
    else
        ok = 1;
done:
    for (int i = 0; i < got; i++)
        if (vdata[i])
            PyBuffer_Release(&vviews[i]);
    PyBuffer_Release(&kview);
    Py_DECREF(seq);
    if (!ok)
        return NULL;
    Py_RETURN_NONE;
}

/* PairSums.take(keys_out, sums_out): copy the keys (first-arrival order) and the sums
 * (n_values x n, row-major) into the given arrays, then start empty. */
static PyObject *PairSums_take(PairSums *self, PyObject *args)
{
    PyObject *keys_obj, *sums_obj;
    if (!PyArg_ParseTuple(args, "OO", &keys_obj, &sums_obj))
        return NULL;
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "PairSums is adding");
        return NULL;
    }
    Py_buffer kview, sview;
    if (ps_view(keys_obj, &kview, "keys_out", 'q', 1))
        return NULL;
    if (ps_view(sums_obj, &sview, "sums_out", 'd', 1)) {
        PyBuffer_Release(&kview);
        return NULL;
    }
    PyObject *out = NULL;
    if (kview.len != self->n * 8 || sview.len != self->n * 8 * self->n_values) {
        PyErr_SetString(PyExc_ValueError, "keys_out must hold len() keys and sums_out n_values x len()");
    }
    else {
        if (self->n) {
            int64_t *keys_out = kview.buf;
            double *sums_out = sview.buf;
            size_t n = (size_t)self->n;
            for (size_t slot = 0; slot < n; slot++) {
                const double *rec = ps_rec(self, slot);
                memcpy(&keys_out[slot], rec, 8);
                for (int i = 0; i < self->n_values; i++)
                    sums_out[(size_t)i * n + slot] = rec[1 + i];
            }
        }
        int n_values = self->n_values;
        ps_free(self);
        self->n_values = n_values;
        if (ps_reserve(self))
            PyErr_NoMemory();
        else
            out = Py_NewRef(Py_None);
    }
    PyBuffer_Release(&sview);
    PyBuffer_Release(&kview);
    return out;
}

static Py_ssize_t PairSums_len(PairSums *self)
{
    return self->n;
}

static void PairSums_dealloc(PairSums *self)
{
    ps_free(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef PairSums_methods[] = {
    {"add", (PyCFunction)PairSums_add, METH_VARARGS,
     "add(keys, values): add values[i][j] (1 where values[i] is None) to sum i of keys[j];\n"
     "keys int64, values float64 arrays as long as keys. Runs without the GIL."},
    {"take", (PyCFunction)PairSums_take, METH_VARARGS,
     "take(keys_out, sums_out): copy the distinct keys (first-arrival order) into keys_out\n"
     "(int64, len()) and their sums into sums_out (float64, n_values x len()), then empty."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods PairSums_as_sequence = {
    .sq_length = (lenfunc)PairSums_len,
};

static PyTypeObject PairSumsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "statemine.parse._linescan.PairSums",
    .tp_basicsize = sizeof(PairSums),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "PairSums(n_values): running float64 sums per int64 key, in arrival order.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)PairSums_init,
    .tp_dealloc = (destructor)PairSums_dealloc,
    .tp_methods = PairSums_methods,
    .tp_as_sequence = &PairSums_as_sequence,
};

/* trim_heap(): hand the C heap's free pages back to the system (glibc's malloc_trim; a
 * no-op elsewhere). Arrays made on a worker thread live in that thread's malloc arena, and
 * once freed their pages stay resident: 140 MiB after the streamed statistics of 1e6
 * distinct (trace, state) pairs, on top of which the outputs then allocate. */
static PyObject *trim_heap(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(unused))
{
#ifdef __GLIBC__
    int released;
    Py_BEGIN_ALLOW_THREADS
    released = malloc_trim(0);
    Py_END_ALLOW_THREADS
    return PyBool_FromLong(released);
#else
    Py_RETURN_FALSE;
#endif
}

static PyMethodDef linescan_functions[] = {
    {"trim_heap", (PyCFunction)trim_heap, METH_NOARGS,
     "trim_heap() -> bool: return the C heap's free pages to the system (glibc; else a no-op)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef linescan_module = {
    PyModuleDef_HEAD_INIT, "_linescan", "Tokenizer of statemine log lines (docs/log-format.md).", -1,
    linescan_functions,
};

PyMODINIT_FUNC PyInit__linescan(void)
{
    init_key_bytes();
    if (PyType_Ready(&ScannerType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&linescan_module);
    if (!m)
        return NULL;
    Py_INCREF(&ScannerType);
    if (PyModule_AddObject(m, "Scanner", (PyObject *)&ScannerType) < 0) {
        Py_DECREF(&ScannerType);
        Py_DECREF(m);
        return NULL;
    }
    if (PyType_Ready(&PairSumsType) < 0 || PyModule_AddObjectRef(m, "PairSums", (PyObject *)&PairSumsType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
