/*
 * statemine.parse.qlog._runscan: one pass over a run of JSON-SEQ records (docs/qlog.md,
 * "Speed"). A run is the bytes between two record separators of a block whose records are
 * one line each, b'{a}\n\x1e{b}\n'. run_count tells a run and its number of records;
 * scan_run sorts its records into those only counted and timed and those parsed whole,
 * by the rule of statemine/parse/qlog/reading.py (_TIMED_NAME, _CODE_WORDS, _OWN_WORDS),
 * which stays the reference: a record is only counted when it starts
 *
 *     {"time": <JSON number>, "name": "[category:]type"
 *
 * (blanks allowed around ':' and ','), its type is not one statemine reads and it names
 * no group_id, path or time format of its own. The times are converted as Python's
 * float() converts them (PyOS_string_to_double). Touches no Python object but the inputs
 * and outputs; holds the GIL (a run is at most one block, 1 MiB).
 *
 * Written for statemine; no code taken from elsewhere.
 */
#define PY_SSIZE_T_CLEAN
#define _GNU_SOURCE
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Python's bytes-pattern \s: [ \t\n\r\f\v]. */
static inline int is_blank(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static inline int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

static const char *skip_blanks(const char *p, const char *end)
{
    while (p < end && is_blank((unsigned char)*p))
        p++;
    return p;
}

/* p at a literal: the pointer past it, or NULL. */
static const char *literal(const char *p, const char *end, const char *lit, size_t n)
{
    if ((size_t)(end - p) < n || memcmp(p, lit, n) != 0)
        return NULL;
    return p + n;
}

/* -?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)? at p, taken greedily (backing off never lets the
 * pattern after it match: the next character would be a digit, '.', 'e' or 'E'); the
 * pointer past it, or NULL. */
static const char *number(const char *p, const char *end)
{
    if (p < end && *p == '-')
        p++;
    if (p >= end || !is_digit((unsigned char)*p))
        return NULL;
    while (p < end && is_digit((unsigned char)*p))
        p++;
    if (p + 1 < end && *p == '.' && is_digit((unsigned char)p[1])) {
        p += 2;
        while (p < end && is_digit((unsigned char)*p))
            p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        const char *q = p + 1;
        if (q < end && (*q == '+' || *q == '-'))
            q++;
        if (q < end && is_digit((unsigned char)*q)) {
            while (q < end && is_digit((unsigned char)*q))
                q++;
            p = q;
        }
    }
    return p;
}

/* Exact powers of ten a double holds (10^0 .. 10^22). */
static const double POW10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                               1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                               1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* The JSON number [p, end) (number() took it) as float() reads it: a mantissa below 2^53
 * times or divided by an exact power of ten <= 1e22 is correctly rounded by one IEEE
 * operation (Clinger's fast path, W. D. Clinger, PLDI 1990); anything else goes to
 * PyOS_string_to_double. -1.0 with an exception set on failure. */
static double to_double(const char *p, const char *end)
{
    const char *q = p;
    int negative = 0;
    if (*q == '-')
        negative = 1, q++;
    uint64_t mantissa = 0;
    int digits = 0, scale = 0;
    for (; q < end && is_digit((unsigned char)*q); q++, digits++)
        mantissa = mantissa * 10 + (uint64_t)(*q - '0');
    if (q < end && *q == '.') {
        for (q++; q < end && is_digit((unsigned char)*q); q++, digits++, scale--)
            mantissa = mantissa * 10 + (uint64_t)(*q - '0');
    }
    int exp_ok = 1;
    if (q < end && (*q == 'e' || *q == 'E')) {
        int e_negative = 0, e = 0;
        q++;
        if (*q == '+' || *q == '-')
            e_negative = *q == '-', q++;
        for (; q < end && is_digit((unsigned char)*q); q++) {
            if (e > 10000)
                exp_ok = 0;
            else
                e = e * 10 + (*q - '0');
        }
        scale += e_negative ? -e : e;
    }
    if (q == end && exp_ok && digits <= 19 && mantissa < ((uint64_t)1 << 53) && scale >= -22 &&
        scale <= 22) {
        double v = (double)mantissa;
        v = scale < 0 ? v / POW10[-scale] : v * POW10[scale];
        return negative ? -v : v;
    }
    char *stop_at = NULL;
    double v = PyOS_string_to_double(p, &stop_at, NULL);
    if (v == -1.0 && PyErr_Occurred())
        return -1.0;
    if (stop_at != end) {
        PyErr_SetString(PyExc_ValueError, "scan_run: a time not read whole");
        return -1.0;
    }
    return v;
}

/* _TIMED_NAME.match on [rec, end): 1 and the time and type spans, or 0. */
static int timed_name(const char *rec, const char *end, const char **t0, const char **t1,
                      const char **n0, const char **n1)
{
    const char *p = rec;
    if (p >= end || *p != '{')
        return 0;
    p = skip_blanks(p + 1, end);
    if (!(p = literal(p, end, "\"time\"", 6)))
        return 0;
    p = skip_blanks(p, end);
    if (!(p = literal(p, end, ":", 1)))
        return 0;
    p = skip_blanks(p, end);
    *t0 = p;
    if (!(p = number(p, end)))
        return 0;
    *t1 = p;
    p = skip_blanks(p, end);
    if (!(p = literal(p, end, ",", 1)))
        return 0;
    p = skip_blanks(p, end);
    if (!(p = literal(p, end, "\"name\"", 6)))
        return 0;
    p = skip_blanks(p, end);
    if (!(p = literal(p, end, ":", 1)))
        return 0;
    p = skip_blanks(p, end);
    if (!(p = literal(p, end, "\"", 1)))
        return 0;
    const char *q = p; /* (?:[^":]*:)? : up to the first '"' or ':' */
    while (q < end && *q != '"' && *q != ':')
        q++;
    if (q >= end)
        return 0;
    if (*q == ':')
        p = q + 1;
    q = p; /* ([^"]*)" */
    while (q < end && *q != '"')
        q++;
    if (q >= end)
        return 0;
    *n0 = p;
    *n1 = q;
    return 1;
}

static PyObject *run_count(PyObject *self, PyObject *arg)
{
    (void)self;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const char *s = view.buf;
    Py_ssize_t len = view.len, n = 0, newlines = 0, separators = 0;
    if (len >= 2 && s[0] == '{' && s[len - 2] == '}' && s[len - 1] == '\n') {
        const char *end = s + len, *p = s;
        while ((p = memchr(p, '\n', (size_t)(end - p)))) { /* memchr: SIMD, not a byte loop */
            newlines++;
            if (p > s && p + 2 < end && p[-1] == '}' && p[1] == '\x1e' && p[2] == '{')
                n++;
            p++;
        }
        p = s;
        while ((p = memchr(p, '\x1e', (size_t)(end - p)))) {
            separators++;
            p++;
        }
        n += 1;
        if (newlines != n || separators != n - 1)
            n = 0;
    }
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(n);
}

/* Whether [p, end) holds any of the words (bytes objects of the tuple). */
static int has_word(const char *p, const char *end, PyObject *words)
{
    Py_ssize_t n = PyTuple_GET_SIZE(words);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *w = PyTuple_GET_ITEM(words, i);
        if (memmem(p, (size_t)(end - p), PyBytes_AS_STRING(w), (size_t)PyBytes_GET_SIZE(w)))
            return 1;
    }
    return 0;
}

/* has_word for words that all begin with '"' and have at most 4 distinct second bytes,
 * each at least 2 bytes long: the candidates ('"' then one of those bytes) found 16
 * bytes at a time with SSE2, each compared whole; the same answer as has_word (-1: the
 * words are not of that kind, or no SSE2). About 3x faster than one memmem a word over a
 * 40 KB run. */
static int has_quoted_word(const char *p, const char *end, PyObject *words)
{
    Py_ssize_t n = PyTuple_GET_SIZE(words);
    unsigned char second[4];
    int n_second = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *w = PyTuple_GET_ITEM(words, i);
        const char *b = PyBytes_AS_STRING(w);
        if (PyBytes_GET_SIZE(w) < 2 || b[0] != '"')
            return -1;
        int seen = 0;
        for (int j = 0; j < n_second; j++)
            seen |= second[j] == (unsigned char)b[1];
        if (!seen) {
            if (n_second == 4)
                return -1;
            second[n_second++] = (unsigned char)b[1];
        }
    }
#if defined(__SSE2__)
    Py_ssize_t len = end - p, i = 0;
    const __m128i quote = _mm_set1_epi8('"');
    __m128i sec[4];
    for (int j = 0; j < 4; j++)
        sec[j] = _mm_set1_epi8((char)second[j < n_second ? j : 0]);
    for (;; i += 16) {
        unsigned mask;
        if (i + 17 <= len) {
            __m128i a = _mm_loadu_si128((const __m128i *)(p + i));
            __m128i b = _mm_loadu_si128((const __m128i *)(p + i + 1));
            __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(b, sec[0]), _mm_cmpeq_epi8(b, sec[1])),
                                     _mm_or_si128(_mm_cmpeq_epi8(b, sec[2]), _mm_cmpeq_epi8(b, sec[3])));
            mask = (unsigned)_mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(a, quote), m));
        } else {
            mask = 0;
            for (Py_ssize_t k = i; k < len; k++)
                if (p[k] == '"')
                    mask |= 1u << (k - i);
            if (!mask)
                return 0;
        }
        while (mask) {
            Py_ssize_t at = i + __builtin_ctz(mask);
            mask &= mask - 1;
            for (Py_ssize_t w = 0; w < n; w++) {
                PyObject *word = PyTuple_GET_ITEM(words, w);
                Py_ssize_t wl = PyBytes_GET_SIZE(word);
                if (at + wl <= len && memcmp(p + at, PyBytes_AS_STRING(word), (size_t)wl) == 0)
                    return 1;
            }
        }
        if (i + 17 > len)
            return 0;
    }
#else
    (void)p, (void)end;
    return -1;
#endif
}

/* Whether [p, end) holds any of the words: has_quoted_word where it applies. */
static int has_any_word(const char *p, const char *end, PyObject *words)
{
    int found = has_quoted_word(p, end, words);
    return found >= 0 ? found : has_word(p, end, words);
}

static PyObject *scan_run(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *run_obj, *code_words, *own_words;
    if (!PyArg_ParseTuple(args, "SOO!:scan_run", &run_obj, &code_words, &PyTuple_Type,
                          &own_words))
        return NULL;
    if (!PyAnySet_Check(code_words)) {
        PyErr_SetString(PyExc_TypeError, "scan_run: code_words must be a set");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(own_words); i++) {
        PyObject *w = PyTuple_GET_ITEM(own_words, i);
        if (!PyBytes_Check(w) || PyBytes_GET_SIZE(w) == 0) {
            PyErr_SetString(PyExc_TypeError, "scan_run: own_words must be non-empty bytes");
            return NULL;
        }
    }
    const char *s = PyBytes_AS_STRING(run_obj);
    Py_ssize_t len = PyBytes_GET_SIZE(run_obj);
    if (len < 1 || s[len - 1] != '\n') {
        PyErr_SetString(PyExc_ValueError, "scan_run: not a run (it must end in a newline)");
        return NULL;
    }
    const char *end = s + len - 1; /* run[:-1] */
    int any_own = has_any_word(s, end, own_words);
    PyObject *indices = PyList_New(0), *records = PyList_New(0);
    if (!indices || !records)
        goto fail;
    Py_ssize_t k = 0, count = 0;
    double first = INFINITY, last = -INFINITY;
    /* the type of the record before and whether it is a code word: most records of a
     * run share a few types */
    const char *prev0 = NULL;
    size_t prev_len = 0;
    int prev_code = 0;
    const char *rec = s;
    for (;;) {
        const char *stop = rec;
        while ((stop = memchr(stop, '\n', (size_t)(end - stop))) && (stop + 1 >= end || stop[1] != '\x1e'))
            stop++;
        const char *rend = stop ? stop : end;
        const char *t0, *t1, *n0, *n1;
        int parse = 1;
        if (timed_name(rec, rend, &t0, &t1, &n0, &n1)) {
            size_t nlen = (size_t)(n1 - n0);
            if (prev0 && nlen == prev_len && memcmp(n0, prev0, nlen) == 0) {
                parse = prev_code;
            } else {
                PyObject *word = PyBytes_FromStringAndSize(n0, (Py_ssize_t)nlen);
                if (!word)
                    goto fail;
                int found = PySet_Contains(code_words, word);
                Py_DECREF(word);
                if (found < 0)
                    goto fail;
                prev0 = n0, prev_len = nlen, prev_code = found;
                parse = found;
            }
            if (!parse && any_own)
                parse = has_word(rec, rend, own_words);
            if (!parse) {
                double v = to_double(t0, t1);
                if (v == -1.0 && PyErr_Occurred())
                    goto fail;
                count++;
                if (v < first)
                    first = v;
                if (v > last)
                    last = v;
            }
        }
        if (parse) {
            PyObject *index = PyLong_FromSsize_t(k);
            PyObject *body = PyBytes_FromStringAndSize(rec, rend - rec);
            int bad = !index || !body || PyList_Append(indices, index) < 0 ||
                      PyList_Append(records, body) < 0;
            Py_XDECREF(index);
            Py_XDECREF(body);
            if (bad)
                goto fail;
        }
        k++;
        if (!stop)
            break;
        rec = stop + 2;
    }
    return Py_BuildValue("nNNndd", k, indices, records, count, first, last);
fail:
    Py_XDECREF(indices);
    Py_XDECREF(records);
    return NULL;
}

/* JSON's blanks inside a one-line record (no newline there): ' ' and '\t'. */
static const char *json_blanks(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

/* A JSON string at p ('"' ... '"') without escapes, control characters or bytes past
 * ASCII: its contents [*s0, *s1) and the pointer past it, or NULL (anything else). */
static const char *plain_string(const char *p, const char *end, const char **s0, const char **s1)
{
    if (p >= end || *p != '"')
        return NULL;
    const char *q = ++p;
    while (q < end && *q != '"') {
        unsigned char c = (unsigned char)*q;
        if (c < 0x20 || c >= 0x7f || c == '\\')
            return NULL;
        q++;
    }
    if (q >= end)
        return NULL;
    *s0 = p, *s1 = q;
    return q + 1;
}

/* A JSON number at p, strictly by RFC 8259's grammar (-?(0|[1-9][0-9]*)(.[0-9]+)?
 * ([eE][-+]?[0-9]+)?), as the float Python gets from orjson.loads and float(): an integer
 * of at most 15 digits exactly (-0 is the integer 0: +0.0), a fraction or exponent through
 * to_double; the pointer past it, or NULL (not a number, a longer integer, a result not
 * finite or below the normal range: left to the Python path). */
static const char *json_number(const char *p, const char *end, double *out)
{
    const char *start = p;
    int negative = 0, integer = 1;
    if (p < end && *p == '-')
        negative = 1, p++;
    if (p >= end || !is_digit((unsigned char)*p))
        return NULL;
    const char *d0 = p;
    if (*p == '0')
        p++;
    else
        while (p < end && is_digit((unsigned char)*p))
            p++;
    const char *d1 = p;
    if (p < end && *p == '.') {
        integer = 0, p++;
        if (p >= end || !is_digit((unsigned char)*p))
            return NULL;
        while (p < end && is_digit((unsigned char)*p))
            p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        integer = 0, p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (p >= end || !is_digit((unsigned char)*p))
            return NULL;
        while (p < end && is_digit((unsigned char)*p))
            p++;
    }
    if (p < end && is_digit((unsigned char)*p))
        return NULL; /* a leading zero followed by digits ("01") */
    if (integer) {
        if (d1 - d0 > 15)
            return NULL;
        int64_t v = 0;
        for (const char *q = d0; q < d1; q++)
            v = v * 10 + (*q - '0');
        *out = negative && v ? -(double)v : (double)v;
        return p;
    }
    double v = to_double(start, p);
    if (v == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return NULL;
    }
    if (!isfinite(v) || (v != 0.0 && fabs(v) < 2.2250738585072014e-308))
        return NULL;
    if (v == 0.0) { /* 0.0 only from a zero mantissa (underflow: left to Python) */
        for (const char *q = d0; q < p && *q != 'e' && *q != 'E'; q++)
            if (*q >= '1' && *q <= '9')
                return NULL;
    }
    *out = v;
    return p;
}

/* The most keys of a metrics record's data read in C (more: the Python path). */
#define MAX_KEYS 32

/* metrics_record(record, types, columns): a record of exactly the shape
 *
 *     {"time": NUM, "name": "[category:]TYPE", "data": {"KEY": VALUE, ...}}
 *
 * (blanks ' ' and '\t' between tokens), TYPE one of ``types``, the keys plain ASCII
 * strings, each at most once, the values numbers, plain strings, true, false or null, read
 * as orjson.loads and vocabulary._decode / _metrics read it: a tuple of the time and, for
 * each column (a tuple of keys, the first present counts), its value (NaN: none present).
 * None for anything else or where the chosen key's value is not a number (the Python path
 * then reads the record and warns as it does). */
static PyObject *metrics_record(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *rec_obj, *types, *columns;
    if (!PyArg_ParseTuple(args, "SO!O!:metrics_record", &rec_obj, &PyTuple_Type, &types,
                          &PyTuple_Type, &columns))
        return NULL;
    const char *p = PyBytes_AS_STRING(rec_obj);
    const char *end = p + PyBytes_GET_SIZE(rec_obj);
    const char *s0, *s1;
    double time;
    if (p >= end || *p != '{')
        Py_RETURN_NONE;
    p = json_blanks(p + 1, end);
    if (!(p = literal(p, end, "\"time\"", 6)))
        Py_RETURN_NONE;
    p = json_blanks(p, end);
    if (!(p = literal(p, end, ":", 1)))
        Py_RETURN_NONE;
    p = json_blanks(p, end);
    if (!(p = json_number(p, end, &time)))
        Py_RETURN_NONE;
    p = json_blanks(p, end);
    if (!(p = literal(p, end, ",", 1)))
        Py_RETURN_NONE;
    p = json_blanks(p, end);
    if (!(p = literal(p, end, "\"name\"", 6)))
        Py_RETURN_NONE;
    p = json_blanks(p, end);
    if (!(p = literal(p, end, ":", 1)))
        Py_RETURN_NONE;
    p = json_blanks(p, end);
    if (!(p = plain_string(p, end, &s0, &s1)))
        Py_RETURN_NONE;
    const char *t0 = s1; /* the type: after the last ':' */
    while (t0 > s0 && t0[-1] != ':')
        t0--;
    int known = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(types) && !known; i++) {
        PyObject *w = PyTuple_GET_ITEM(types, i);
        if (!PyBytes_Check(w))
            return PyErr_Format(PyExc_TypeError, "metrics_record: types must be bytes");
        known = PyBytes_GET_SIZE(w) == s1 - t0 && memcmp(PyBytes_AS_STRING(w), t0, (size_t)(s1 - t0)) == 0;
    }
    if (!known)
        Py_RETURN_NONE;
    p = json_blanks(p, end);
    if (!(p = literal(p, end, ",", 1)))
        Py_RETURN_NONE;
    p = json_blanks(p, end);
    if (!(p = literal(p, end, "\"data\"", 6)))
        Py_RETURN_NONE;
    p = json_blanks(p, end);
    if (!(p = literal(p, end, ":", 1)))
        Py_RETURN_NONE;
    p = json_blanks(p, end);
    if (!(p = literal(p, end, "{", 1)))
        Py_RETURN_NONE;
    const char *k0[MAX_KEYS], *k1[MAX_KEYS];
    double value[MAX_KEYS];
    int numeric[MAX_KEYS];
    int n = 0;
    p = json_blanks(p, end);
    if (p < end && *p == '}') {
        p++;
    } else {
        for (;;) {
            if (n == MAX_KEYS || !(p = plain_string(p, end, &k0[n], &k1[n])))
                Py_RETURN_NONE;
            for (int j = 0; j < n; j++) /* a key given twice: orjson keeps the last */
                if (k1[j] - k0[j] == k1[n] - k0[n] && memcmp(k0[j], k0[n], (size_t)(k1[n] - k0[n])) == 0)
                    Py_RETURN_NONE;
            p = json_blanks(p, end);
            if (!(p = literal(p, end, ":", 1)))
                Py_RETURN_NONE;
            p = json_blanks(p, end);
            const char *q;
            numeric[n] = 0;
            if (p < end && (*p == '-' || is_digit((unsigned char)*p))) {
                if (!(p = json_number(p, end, &value[n])))
                    Py_RETURN_NONE;
                numeric[n] = 1;
            } else if ((q = literal(p, end, "true", 4)) || (q = literal(p, end, "false", 5)) ||
                       (q = literal(p, end, "null", 4))) {
                p = q;
            } else if (!(p = plain_string(p, end, &s0, &s1))) {
                Py_RETURN_NONE;
            }
            n++;
            p = json_blanks(p, end);
            if (p < end && *p == '}') {
                p++;
                break;
            }
            if (!(p = literal(p, end, ",", 1)))
                Py_RETURN_NONE;
            p = json_blanks(p, end);
        }
    }
    p = json_blanks(p, end);
    if (!(p = literal(p, end, "}", 1)))
        Py_RETURN_NONE;
    if (json_blanks(p, end) != end)
        Py_RETURN_NONE;
    Py_ssize_t n_columns = PyTuple_GET_SIZE(columns);
    PyObject *out = PyTuple_New(1 + n_columns);
    if (!out)
        return NULL;
    PyObject *v = PyFloat_FromDouble(time);
    if (!v)
        goto fail;
    PyTuple_SET_ITEM(out, 0, v);
    for (Py_ssize_t c = 0; c < n_columns; c++) {
        PyObject *keys = PyTuple_GET_ITEM(columns, c);
        if (!PyTuple_Check(keys)) {
            PyErr_SetString(PyExc_TypeError, "metrics_record: columns must be tuples of bytes");
            goto fail;
        }
        int found = -1;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(keys) && found < 0; i++) {
            PyObject *w = PyTuple_GET_ITEM(keys, i);
            if (!PyBytes_Check(w)) {
                PyErr_SetString(PyExc_TypeError, "metrics_record: keys must be bytes");
                goto fail;
            }
            for (int j = 0; j < n; j++)
                if (PyBytes_GET_SIZE(w) == k1[j] - k0[j] &&
                    memcmp(PyBytes_AS_STRING(w), k0[j], (size_t)(k1[j] - k0[j])) == 0) {
                    found = j;
                    break;
                }
        }
        if (found >= 0 && !numeric[found]) {
            Py_DECREF(out);
            Py_RETURN_NONE;
        }
        v = PyFloat_FromDouble(found >= 0 ? value[found] : NAN);
        if (!v)
            goto fail;
        PyTuple_SET_ITEM(out, 1 + c, v);
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

static PyMethodDef methods[] = {
    {"run_count", run_count, METH_O,
     "run_count(region) -> the number of one-line JSON-SEQ records of a run, else 0."},
    {"scan_run", scan_run, METH_VARARGS,
     "scan_run(run, code_words, own_words) -> (n_records, indices, records, count, first, "
     "last): the records parsed whole (their indices in the run and bytes) and the count "
     "and time range of those only counted."},
    {"metrics_record", metrics_record, METH_VARARGS,
     "metrics_record(record, types, columns) -> (time, column values...) of a metrics "
     "record of the plain shape, else None (read by the Python path)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_runscan", "JSON-SEQ runs of qlog records in one pass.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__runscan(void) { return PyModule_Create(&module); }
