/*
 * statemine.infer.synoptic._walks: the loops the Synoptic family's merge checks spend most
 * of their time in, on a model's edge list (docs/synoptic-engine.md, "Merge checks in C"):
 *
 * - relax_rounds: the rounds of timecheck.walk_extremes (Perfume's walk totals per bound
 *   group): its first rounds, and, when they have not settled, the rounds with the nodes
 *   on positive cycles marked (cyclic, found in Python).  walk_extremes's own rounds in
 *   Python stay the reference (cycle_rounds=0), and finish what still grows after those.
 *   Each round is a whole round of walk_extremes's step, in the same order of operations
 *   on the same doubles, so the totals are bit-identical to the Python rounds':
 *
 *       s[r, u]   = best(first_only and is_src[r, u] ? none : x[r, u], start[r, u])
 *       out[r, v] = best(x[r, v], best over edges u -> v of s[r, u] + w)
 *       out[r, v] = +inf if cyclic[r, v] and out[r, v] > -inf    (when cyclic is given)
 *       out[r, v] = min(out[r, v], cap[r])                       (upper, when capped)
 *
 *   best is max (upper) or min; none is -inf (upper) or +inf.  A round relaxes only the
 *   edges out of the nodes whose totals the round before changed; the first, out of
 *   every node (relax_rounds) or of those where x may not be a fix-point of the rounds
 *   (merged_rounds).
 * - merged_rounds: the same rounds for timecheck.BoundCheck's check of a merge, from the
 *   totals before it (their columns merged, the walks' starts and the first round's
 *   nodes set up here);
 * - closure: timecheck.closure's reach, a depth-first search per row;
 * - onward: perfume_infer.onward_totals's rounds (walks out of each node);
 * - doomed: perfume_infer._TimedMerges's merges that must fail, one bound group over
 *   every candidate of an event;
 * - merge_edges: a model's edge list after merging two nodes (timecheck.aggregate_edges
 *   of the renamed edges);
 * - bits_gather, bits_grow: check.py's bitset gather and least fix-point (the untimed
 *   invariants of Synoptic, k-tails and Perfume).
 *
 * Each touches no Python object but its arguments, checks every array's length and every
 * edge's ends before reading, and holds the GIL (microseconds per call on these models).
 *
 * Written for statemine; no code taken from elsewhere.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* relax_rounds's answers (timecheck.py names them). */
enum { SETTLED = 0, STOPPED = 1, GROWING = 2 };

/* max (upper) or min of two totals, as numpy's maximum and minimum on numbers that are
 * not NaN (the totals and deltas never are: sums of finite deltas and +-inf). */
static inline double best(int upper, double a, double b)
{
    return upper ? (a > b ? a : b) : (a < b ? a : b);
}

/* A contiguous buffer of obj (None: view->obj stays NULL) holding exactly count items of
 * size bytes each; 0 on success, -1 with a ValueError set. */
static int get_array(PyObject *obj, Py_buffer *view, Py_ssize_t count, Py_ssize_t size,
                     int writable, const char *name)
{
    if (obj == Py_None)
        return 0;
    if (PyObject_GetBuffer(obj, view, writable ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0)
        return -1;
    if (view->len != count * size) {
        PyErr_Format(PyExc_ValueError, "%s holds %zd bytes, not %zd", name,
                     view->len, count * size);
        return -1;
    }
    return 0;
}

/* Edges frm[e] -> to[e] (int64) between nodes (rows) 0..rows-1: 0, or -1 with a
 * ValueError. */
static int edges_in_range(const int64_t *frm, const int64_t *to, Py_ssize_t n_edges,
                          Py_ssize_t rows, const char *name)
{
    for (Py_ssize_t e = 0; e < n_edges; e++) {
        if (frm[e] < 0 || frm[e] >= rows || to[e] < 0 || to[e] >= rows) {
            PyErr_Format(PyExc_ValueError, "%s: an edge names no node", name);
            return -1;
        }
    }
    return 0;
}

/* The edges grouped by source, a stable counting sort (the edges may come in any order):
 * edge order[i] for first[u] <= i < first[u + 1] leaves node u (first: n + 1 entries,
 * order: n_edges). */
static void by_source(const int64_t *frm, Py_ssize_t n_edges, Py_ssize_t n, Py_ssize_t *first,
                      Py_ssize_t *order)
{
    memset(first, 0, (size_t)(n + 1) * sizeof(Py_ssize_t));
    for (Py_ssize_t e = 0; e < n_edges; e++)
        first[frm[e] + 1]++;
    for (Py_ssize_t u = 0; u < n; u++)
        first[u + 1] += first[u];
    for (Py_ssize_t e = 0; e < n_edges; e++)
        order[first[frm[e]]++] = e;
    for (Py_ssize_t u = n; u > 0; u--) /* the fill moved each start to the next's */
        first[u] = first[u - 1];
    first[0] = 0;
}

/* The inputs of the rounds (timecheck.walk_extremes's step), sizes checked by the caller:
 * edges src[e] -> dst[e] weighted w, rows x n totals; start, mask (is_src), cap, stop and
 * cyclic as relax_rounds's arguments, moved the nodes whose edges the first round
 * relaxes (mask, cap, stop, cyclic, moved may be NULL; moved NULL: every node). */
typedef struct {
    const int64_t *src, *dst;
    const double *w, *start, *cap, *stop;
    const unsigned char *mask, *cyclic, *moved;
    Py_ssize_t n_edges, n_rows, n;
    int upper;
} Rounds;

/* One row's totals after a round's relaxations: best of the total before (xr[v]) and
 * the round's (o[v]), then the positive cycles' +inf (cr, may be NULL) and the cap (cp,
 * may be NULL; upper). Applying it twice gives what applying it once does. */
static inline double settle_total(int upper, double before, double relaxed,
                                  const unsigned char *cr, const double *cp, Py_ssize_t v)
{
    double t = best(upper, before, relaxed);
    if (cr && cr[v] && t > -INFINITY)
        t = INFINITY;
    if (cp && t > *cp)
        t = *cp;
    return t;
}

/* Rounds after which run_rounds, not settled yet, orders the graph's strongly connected
 * components: on a graph where walks do not grow around a cycle (a trace-chain model, say,
 * or one whose positive cycles are marked), the rounds take as many rounds as its longest
 * path, and one pass over the components in topological order gives what they end at. */
enum { SORT_AFTER = 8 };

/* A node's place in a depth-first search's order (components sorts by it). */
typedef struct {
    Py_ssize_t post, node;
} Finish;

static int later_finish_first(const void *a, const void *b)
{
    Py_ssize_t x = ((const Finish *)a)->post, y = ((const Finish *)b)->post;
    return (x < y) - (x > y);
}

/* The strongly connected components of the n nodes (edges src[e] -> dst[e], grouped by
 * source as by_source leaves them in first/order), by Tarjan's algorithm without
 * recursion (R. Tarjan, "Depth-first search and linear graph algorithms", SIAM J.
 * Comput. 1(2), 1972): seq holds the nodes, each component's contiguous from bound[c]
 * to bound[c + 1] (bound: n + 1 entries, *n_comp components), components in topological
 * order (Tarjan's algorithm finds them sinks first) and a component's nodes in reverse
 * post-order of the search, so that every edge inside a component but the search's
 * back edges points forward in seq.  0, or -1 with MemoryError set. */
static int components(const int64_t *dst, Py_ssize_t n, const Py_ssize_t *first,
                      const Py_ssize_t *order, Py_ssize_t *seq, Py_ssize_t *bound,
                      Py_ssize_t *n_comp)
{
    size_t size = (size_t)(n ? n : 1);
    Py_ssize_t *index = PyMem_Malloc(size * sizeof(Py_ssize_t)); /* -1: not seen yet */
    Py_ssize_t *low = PyMem_Malloc(size * sizeof(Py_ssize_t));
    Py_ssize_t *post = PyMem_Malloc(size * sizeof(Py_ssize_t));
    Py_ssize_t *stack = PyMem_Malloc(size * sizeof(Py_ssize_t)); /* Tarjan's stack */
    Py_ssize_t *calls = PyMem_Malloc(size * sizeof(Py_ssize_t));  /* the search's path */
    Py_ssize_t *next = PyMem_Malloc(size * sizeof(Py_ssize_t));   /* its next edge */
    unsigned char *held = PyMem_Calloc(size, 1);                 /* on Tarjan's stack */
    Finish *found = PyMem_Malloc(size * sizeof(Finish));
    int status = -1;
    if (!index || !low || !post || !stack || !calls || !next || !held || !found) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t v = 0; v < n; v++)
        index[v] = -1;
    Py_ssize_t seen = 0, finished = 0, held_n = 0, end = n, comps = 0;
    for (Py_ssize_t root = 0; root < n; root++) {
        if (index[root] >= 0)
            continue;
        Py_ssize_t depth = 0;
        calls[depth++] = root;
        index[root] = low[root] = seen++;
        next[root] = first[root];
        stack[held_n++] = root;
        held[root] = 1;
        while (depth) {
            Py_ssize_t u = calls[depth - 1];
            if (next[u] < first[u + 1]) {
                Py_ssize_t v = dst[order[next[u]++]];
                if (index[v] < 0) {
                    index[v] = low[v] = seen++;
                    next[v] = first[v];
                    stack[held_n++] = v;
                    held[v] = 1;
                    calls[depth++] = v;
                } else if (held[v] && index[v] < low[u]) {
                    low[u] = index[v];
                }
                continue;
            }
            post[u] = finished++;
            depth--;
            if (depth && low[u] < low[calls[depth - 1]])
                low[calls[depth - 1]] = low[u];
            if (low[u] != index[u])
                continue;
            /* u roots a component: the stack down to u; placed before those found
             * so far (they are its successors') */
            Py_ssize_t k = 0;
            for (;;) {
                Py_ssize_t w = stack[--held_n];
                held[w] = 0;
                found[k].post = post[w];
                found[k++].node = w;
                if (w == u)
                    break;
            }
            qsort(found, (size_t)k, sizeof(Finish), later_finish_first);
            end -= k;
            for (Py_ssize_t i = 0; i < k; i++)
                seq[end + i] = found[i].node;
            bound[comps++] = end; /* reversed below */
        }
    }
    /* bound holds each component's start, sinks first: reverse it, then close it */
    for (Py_ssize_t i = 0; i < comps / 2; i++) {
        Py_ssize_t t = bound[i];
        bound[i] = bound[comps - 1 - i];
        bound[comps - 1 - i] = t;
    }
    bound[comps] = n;
    *n_comp = comps;
    status = 0;
done:
    PyMem_Free(index);
    PyMem_Free(low);
    PyMem_Free(post);
    PyMem_Free(stack);
    PyMem_Free(calls);
    PyMem_Free(next);
    PyMem_Free(held);
    PyMem_Free(found);
    return status;
}

/* 1 when the component pass may end the rounds: no edge inside a component (comp: each
 * node's) could make walks grow around its cycle (upper: weight > 0; lower: < 0), or
 * positive cycles are marked (p->cyclic, upper: a walk reaching one is +inf at once). */
static int cycles_settle(const Rounds *p, const Py_ssize_t *comp)
{
    if (p->upper && p->cyclic)
        return 1;
    for (Py_ssize_t e = 0; e < p->n_edges; e++) {
        if (comp[p->src[e]] == comp[p->dst[e]] && (p->upper ? p->w[e] > 0 : p->w[e] < 0))
            return 0;
    }
    return 1;
}

/* The rounds' end from totals x between their start and their end (in place), per row
 * over the components in topological order (seq, bound: components's), once their
 * sources' totals are final: each node's total settle_total(x, best over its edges u ->
 * v of s(u) + w).  A component of one node without a self-loop takes one pass (its
 * sources' totals are final); a larger one, passes over its nodes in place until none
 * changes, at most its size + 1 of them (no walk grows around a cycle, cycles_settle,
 * so its totals come from paths of fewer edges than it has nodes).
 *
 * Why these are the rounds' very doubles: a round maps totals x to F(x), F monotone (best,
 * a sum with a fixed term, the +inf of a marked node and the cap are) and F(x) >= x
 * (above for upper, below for lower); from an x between the start and the end, the
 * rounds end at the least fix-point of F beyond x, and so do updates of single nodes in
 * any order that go on until none changes (each stays below that fix-point, by
 * monotony, and ends at a fix-point).  SETTLED, STOPPED when a changed total passes
 * stop (the totals it did not change passed no stop before; they are final even so),
 * GROWING when a component has not settled in its passes (x then holds totals of real
 * walks, between the start and the end); -1 with MemoryError set. */
static int component_pass(const Rounds *p, double *xs, const Py_ssize_t *seq,
                          const Py_ssize_t *bound, Py_ssize_t n_comp)
{
    const Py_ssize_t n = p->n, n_edges = p->n_edges;
    Py_ssize_t *into = PyMem_Malloc((size_t)(n + 1) * sizeof(Py_ssize_t));
    Py_ssize_t *by_dst = PyMem_Malloc((size_t)(n_edges ? n_edges : 1) * sizeof(Py_ssize_t));
    if (!into || !by_dst) {
        PyMem_Free(into);
        PyMem_Free(by_dst);
        PyErr_NoMemory();
        return -1;
    }
    by_source(p->dst, n_edges, n, into, by_dst); /* the edges grouped by target */
    const int upper = p->upper;
    const double none = upper ? -INFINITY : INFINITY;
    int stopped = 0, growing = 0;
    for (Py_ssize_t r = 0; r < p->n_rows && !growing; r++) {
        double *xr = xs + r * n;
        const double *sr = p->start + r * n, *lim = p->stop ? p->stop + r * n : NULL;
        const double *cp = p->cap ? p->cap + r : NULL;
        const unsigned char *mr = p->mask ? p->mask + r * n : NULL;
        const unsigned char *cr = p->cyclic ? p->cyclic + r * n : NULL;
        for (Py_ssize_t c = 0; c < n_comp && !growing; c++) {
            Py_ssize_t lo = bound[c], hi = bound[c + 1];
            Py_ssize_t passes = hi - lo + 1;
            if (passes == 2) {
                Py_ssize_t v = seq[lo], loops = 0;
                for (Py_ssize_t i = into[v]; i < into[v + 1]; i++)
                    loops += p->src[by_dst[i]] == v;
                if (!loops)
                    passes = 1; /* no cycle: its sources' totals are final */
            }
            int changed = 1;
            for (Py_ssize_t k = 0; k < passes && changed; k++) {
                changed = 0;
                for (Py_ssize_t j = lo; j < hi; j++) {
                    Py_ssize_t v = seq[j];
                    double relaxed = none;
                    for (Py_ssize_t i = into[v]; i < into[v + 1]; i++) {
                        Py_ssize_t e = by_dst[i], u = p->src[e];
                        double t = best(upper, (mr && mr[u]) ? none : xr[u], sr[u]) + p->w[e];
                        if (upper ? t > relaxed : t < relaxed)
                            relaxed = t;
                    }
                    double t = settle_total(upper, xr[v], relaxed, cr, cp, v);
                    if (t == xr[v])
                        continue;
                    changed = 1;
                    if (lim && (upper ? t > lim[v] : t < lim[v]))
                        stopped = 1;
                    xr[v] = t;
                }
            }
            growing = changed && passes > 1;
        }
    }
    PyMem_Free(into);
    PyMem_Free(by_dst);
    return stopped ? STOPPED : growing ? GROWING : SETTLED;
}

/* Up to `rounds` rounds on the totals x (in place): SETTLED, STOPPED or GROWING, or -1
 * with MemoryError set.
 *
 * The first round visits every node of every row. A later round relaxes only the edges
 * out of the nodes whose totals the round before changed (the row's frontier) and
 * settles only their targets: any other node's total is one the first round already
 * settled (settle_total twice is settle_total once) and no relaxed edge reaches it, so
 * the round leaves it as it is. The totals are those of whole rounds, bit for bit, at
 * O(frontier's edges) a round instead of O(rows x nodes). Still growing after
 * SORT_AFTER rounds where no walk grows around a cycle (cycles_settle), one
 * component_pass ends them (where the rounds, given enough of them, would end): a
 * trace-chain model of n nodes took n rounds of O(n) nodes each, and so did one with a
 * few positive cycles, marked, before the component pass (issue 31: a one-trace log of
 * 20,000 events did not finish). */
static int run_rounds(const Rounds *p, double *xs, Py_ssize_t rounds)
{
    const Py_ssize_t n = p->n, n_edges = p->n_edges, cells = p->n_rows * n;
    const int64_t *es = p->src, *ed = p->dst;
    double *s = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(double));
    double *out = PyMem_Malloc((size_t)(cells ? cells : 1) * sizeof(double));
    unsigned char *moved = PyMem_Malloc((size_t)(cells ? cells : 1)); /* changed last round */
    Py_ssize_t *first = PyMem_Malloc((size_t)(n + 1) * sizeof(Py_ssize_t));
    Py_ssize_t *order = PyMem_Malloc((size_t)(n_edges ? n_edges : 1) * sizeof(Py_ssize_t));
    /* per row, the nodes it changed last round (front + r * n, count[r] of them) */
    Py_ssize_t *front = PyMem_Malloc((size_t)(cells ? cells : 1) * sizeof(Py_ssize_t));
    Py_ssize_t *count = PyMem_Malloc((size_t)(p->n_rows ? p->n_rows : 1) * sizeof(Py_ssize_t));
    Py_ssize_t *hit = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(Py_ssize_t)); /* targets */
    unsigned char *is_hit = PyMem_Calloc((size_t)(n ? n : 1), 1);
    /* the strongly connected components (components's seq and bound), each node's */
    Py_ssize_t *seq = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(Py_ssize_t));
    Py_ssize_t *bound = PyMem_Malloc((size_t)(n + 1) * sizeof(Py_ssize_t));
    Py_ssize_t *comp = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(Py_ssize_t));
    int status = -1;
    if (!s || !out || !moved || !first || !order || !front || !count || !hit || !is_hit ||
        !seq || !bound || !comp) {
        PyErr_NoMemory();
        goto done;
    }
    by_source(es, n_edges, n, first, order);
    const int upper = p->upper;
    const double none = upper ? -INFINITY : INFINITY;
    const double *ew = p->w, *st = p->start, *cp = p->cap, *lim = p->stop;
    const unsigned char *is_src = p->mask, *on_cycle = p->cyclic;
    status = GROWING;
    if (p->moved)
        memcpy(moved, p->moved, (size_t)cells);
    else
        memset(moved, 1, (size_t)cells);
    Py_ssize_t round = 0;
    if (rounds > 0) {
        /* the first round: every node */
        round = 1;
        int changed = 0;
        for (Py_ssize_t r = 0; r < p->n_rows; r++) {
            const double *xr = xs + r * n, *sr = st + r * n;
            const unsigned char *mr = is_src ? is_src + r * n : NULL;
            unsigned char *mv = moved + r * n;
            double *o = out + r * n;
            for (Py_ssize_t v = 0; v < n; v++) {
                double a = (mr && mr[v]) ? none : xr[v];
                s[v] = best(upper, a, sr[v]);
                o[v] = none;
            }
            /* An edge out of a node whose total the last round kept gave its target
             * no more than the target's total already holds (s is a function of x
             * and fixed inputs), so only edges out of moved nodes are relaxed: the
             * same totals as relaxing every edge (max and min in any order). */
            for (Py_ssize_t u = 0; u < n; u++) {
                if (!mv[u])
                    continue;
                for (Py_ssize_t i = first[u]; i < first[u + 1]; i++) {
                    Py_ssize_t e = order[i];
                    double t = s[u] + ew[e];
                    double *at = o + ed[e];
                    if (upper ? t > *at : t < *at)
                        *at = t;
                }
            }
            const unsigned char *cr = on_cycle ? on_cycle + r * n : NULL;
            Py_ssize_t *fr = front + r * n;
            count[r] = 0;
            for (Py_ssize_t v = 0; v < n; v++) {
                double t = settle_total(upper, xr[v], o[v], cr, cp ? cp + r : NULL, v);
                o[v] = t;
                if (t != xr[v])
                    fr[count[r]++] = v;
            }
            changed |= count[r] > 0;
        }
        if (!changed) {
            status = SETTLED;
            goto done;
        }
        memcpy(xs, out, (size_t)cells * sizeof(double));
        if (lim) {
            for (Py_ssize_t i = 0; i < cells; i++) {
                if (upper ? xs[i] > lim[i] : xs[i] < lim[i]) {
                    status = STOPPED;
                    goto done;
                }
            }
        }
    }
    int sorted = 0; /* 1: ordered the components and found cycles walks grow around */
    for (; round < rounds; round++) {
        if (round >= SORT_AFTER && !sorted) {
            sorted = 1;
            Py_ssize_t n_comp = 0;
            if (components(ed, n, first, order, seq, bound, &n_comp) < 0) {
                status = -1;
                goto done;
            }
            for (Py_ssize_t c = 0; c < n_comp; c++)
                for (Py_ssize_t j = bound[c]; j < bound[c + 1]; j++)
                    comp[seq[j]] = c;
            if (cycles_settle(p, comp)) {
                status = component_pass(p, xs, seq, bound, n_comp);
                goto done;
            }
        }
        int changed = 0, stopped = 0;
        for (Py_ssize_t r = 0; r < p->n_rows; r++) {
            double *xr = xs + r * n;
            const double *sr = st + r * n;
            const unsigned char *mr = is_src ? is_src + r * n : NULL;
            const unsigned char *cr = on_cycle ? on_cycle + r * n : NULL;
            Py_ssize_t *fr = front + r * n, n_hit = 0;
            double *o = out; /* this row's round totals, at its targets only */
            for (Py_ssize_t k = 0; k < count[r]; k++) {
                Py_ssize_t u = fr[k];
                double su = best(upper, (mr && mr[u]) ? none : xr[u], sr[u]);
                for (Py_ssize_t i = first[u]; i < first[u + 1]; i++) {
                    Py_ssize_t e = order[i], v = ed[e];
                    double t = su + ew[e];
                    if (!is_hit[v]) {
                        is_hit[v] = 1;
                        hit[n_hit++] = v;
                        o[v] = none;
                    }
                    if (upper ? t > o[v] : t < o[v])
                        o[v] = t;
                }
            }
            count[r] = 0;
            for (Py_ssize_t k = 0; k < n_hit; k++) {
                Py_ssize_t v = hit[k];
                is_hit[v] = 0;
                double t = settle_total(upper, xr[v], o[v], cr, cp ? cp + r : NULL, v);
                if (t == xr[v])
                    continue;
                xr[v] = t;
                fr[count[r]++] = v;
                if (lim && (upper ? t > lim[r * n + v] : t < lim[r * n + v]))
                    stopped = 1;
            }
            changed |= count[r] > 0;
        }
        if (!changed) {
            status = SETTLED;
            break;
        }
        if (stopped) {
            status = STOPPED;
            break;
        }
    }
done:
    PyMem_Free(s);
    PyMem_Free(out);
    PyMem_Free(moved);
    PyMem_Free(first);
    PyMem_Free(order);
    PyMem_Free(front);
    PyMem_Free(count);
    PyMem_Free(hit);
    PyMem_Free(is_hit);
    PyMem_Free(seq);
    PyMem_Free(bound);
    PyMem_Free(comp);
    return status;
}

static PyObject *relax_rounds(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *src_o, *dst_o, *w_o, *x_o, *start_o, *mask_o, *cap_o, *stop_o, *cyclic_o;
    Py_ssize_t n_edges, n_rows, n, rounds;
    int upper;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOnnnpn:relax_rounds", &src_o, &dst_o, &w_o, &x_o,
                          &start_o, &mask_o, &cap_o, &stop_o, &cyclic_o, &n_edges, &n_rows, &n,
                          &upper, &rounds))
        return NULL;
    if (n_edges < 0 || n_rows < 0 || n < 0 || rounds < 0) {
        PyErr_SetString(PyExc_ValueError, "relax_rounds: negative size");
        return NULL;
    }
    Py_buffer src = {0}, dst = {0}, w = {0}, x = {0}, start = {0}, mask = {0}, cap = {0},
              stop = {0}, cyclic = {0};
    PyObject *answer = NULL;
    Py_ssize_t cells = n_rows * n;
    if (n_rows && cells / n_rows != n) {
        PyErr_NoMemory();
        goto done;
    }
    if (src_o == Py_None || dst_o == Py_None || w_o == Py_None || x_o == Py_None ||
        start_o == Py_None) {
        PyErr_SetString(PyExc_TypeError,
                        "relax_rounds: only the mask, cap, stop and cyclic may be None");
        goto done;
    }
    if (get_array(src_o, &src, n_edges, sizeof(int64_t), 0, "src") ||
        get_array(dst_o, &dst, n_edges, sizeof(int64_t), 0, "dst") ||
        get_array(w_o, &w, n_edges, sizeof(double), 0, "w") ||
        get_array(x_o, &x, cells, sizeof(double), 1, "x") ||
        get_array(start_o, &start, cells, sizeof(double), 0, "start") ||
        get_array(mask_o, &mask, cells, 1, 0, "mask") ||
        get_array(cap_o, &cap, n_rows, sizeof(double), 0, "cap") ||
        get_array(stop_o, &stop, cells, sizeof(double), 0, "stop") ||
        get_array(cyclic_o, &cyclic, cells, 1, 0, "cyclic"))
        goto done;
    if (edges_in_range(src.buf, dst.buf, n_edges, n, "relax_rounds"))
        goto done;
    Rounds p = {src.buf, dst.buf, w.buf, start.buf, cap.buf, stop.buf, mask.buf, cyclic.buf,
                NULL, n_edges, n_rows, n, upper};
    int status = run_rounds(&p, x.buf, rounds);
    if (status >= 0)
        answer = PyLong_FromLong(status);
done:
    PyBuffer_Release(&src);
    PyBuffer_Release(&dst);
    PyBuffer_Release(&w);
    PyBuffer_Release(&x);
    PyBuffer_Release(&start);
    PyBuffer_Release(&mask);
    PyBuffer_Release(&cap);
    PyBuffer_Release(&stop);
    PyBuffer_Release(&cyclic);
    return answer;
}

/* merged_rounds(src, dst, w, before, keep, gone, node_type, sources, first, extra, cap,
 * stop, x, n_edges, n_rows, n, upper, rounds) -> status: timecheck.BoundCheck's walks of
 * one bound group on a graph with node gone merged into keep (one type), from the totals
 * before the merge: x (rows x n, written) = before with gone's column merged into keep's
 * (best) and emptied, walks starting at the nodes of type sources[r] (first, rows x n
 * bools, given: at those nodes, AlwaysPrecedes' first-a walks, which end at the next a),
 * the first round relaxing the edges out of keep and out of the nodes of extra (rows x
 * n bools or None: new first a's); then relax_rounds's rounds, and STOPPED also when a
 * total passes stop once they have settled. */
static PyObject *merged_rounds(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *src_o, *dst_o, *w_o, *before_o, *type_o, *sources_o, *first_o, *extra_o, *cap_o,
        *stop_o, *x_o;
    Py_ssize_t keep, gone, n_edges, n_rows, n, rounds;
    int upper;
    if (!PyArg_ParseTuple(args, "OOOOnnOOOOOOOnnnpn:merged_rounds", &src_o, &dst_o, &w_o,
                          &before_o, &keep, &gone, &type_o, &sources_o, &first_o, &extra_o,
                          &cap_o, &stop_o, &x_o, &n_edges, &n_rows, &n, &upper, &rounds))
        return NULL;
    if (n_edges < 0 || n_rows < 0 || n < 0 || rounds < 0) {
        PyErr_SetString(PyExc_ValueError, "merged_rounds: negative size");
        return NULL;
    }
    Py_buffer src = {0}, dst = {0}, w = {0}, before = {0}, type = {0}, sources = {0},
              first = {0}, extra = {0}, cap = {0}, stop = {0}, x = {0};
    double *start = NULL;
    unsigned char *mask = NULL, *moved = NULL;
    PyObject *answer = NULL;
    Py_ssize_t cells = n_rows * n;
    if (n_rows && cells / n_rows != n) {
        PyErr_NoMemory();
        goto done;
    }
    if (src_o == Py_None || dst_o == Py_None || w_o == Py_None || before_o == Py_None ||
        type_o == Py_None || sources_o == Py_None || stop_o == Py_None || x_o == Py_None) {
        PyErr_SetString(PyExc_TypeError, "merged_rounds: only first, extra and cap may be None");
        goto done;
    }
    if (get_array(src_o, &src, n_edges, sizeof(int64_t), 0, "src") ||
        get_array(dst_o, &dst, n_edges, sizeof(int64_t), 0, "dst") ||
        get_array(w_o, &w, n_edges, sizeof(double), 0, "w") ||
        get_array(before_o, &before, cells, sizeof(double), 0, "before") ||
        get_array(type_o, &type, n, sizeof(int64_t), 0, "node_type") ||
        get_array(sources_o, &sources, n_rows, sizeof(int64_t), 0, "sources") ||
        get_array(first_o, &first, cells, 1, 0, "first") ||
        get_array(extra_o, &extra, cells, 1, 0, "extra") ||
        get_array(cap_o, &cap, n_rows, sizeof(double), 0, "cap") ||
        get_array(stop_o, &stop, cells, sizeof(double), 0, "stop") ||
        get_array(x_o, &x, cells, sizeof(double), 1, "x"))
        goto done;
    if (edges_in_range(src.buf, dst.buf, n_edges, n, "merged_rounds"))
        goto done;
    if (keep < 0 || keep >= n || gone < 0 || gone >= n) {
        PyErr_SetString(PyExc_ValueError, "merged_rounds: keep or gone names no node");
        goto done;
    }
    start = PyMem_Malloc((size_t)(cells ? cells : 1) * sizeof(double));
    moved = PyMem_Malloc((size_t)(cells ? cells : 1));
    mask = first.obj ? PyMem_Malloc((size_t)(cells ? cells : 1)) : NULL;
    if (!start || !moved || (first.obj && !mask)) {
        PyErr_NoMemory();
        goto done;
    }
    const double none = upper ? -INFINITY : INFINITY;
    const double *old = before.buf;
    const int64_t *nt = type.buf, *src_type = sources.buf;
    const unsigned char *fa = first.buf, *ex = extra.buf;
    double *xs = x.buf;
    for (Py_ssize_t r = 0; r < n_rows; r++) {
        for (Py_ssize_t v = 0; v < n; v++) {
            Py_ssize_t i = r * n + v;
            int is_src = nt[v] == src_type[r];
            xs[i] = old[i];
            start[i] = (fa ? fa[i] : is_src) ? 0.0 : none;
            if (mask)
                mask[i] = (unsigned char)is_src;
            moved[i] = v == keep || (ex && ex[i]);
        }
        xs[r * n + keep] = best(upper, old[r * n + keep], old[r * n + gone]);
        xs[r * n + gone] = none;
    }
    Rounds p = {src.buf, dst.buf, w.buf, start, cap.buf, stop.buf, mask, NULL, moved,
                n_edges, n_rows, n, upper};
    int status = run_rounds(&p, xs, rounds);
    if (status < 0)
        goto done;
    const double *lim = stop.buf;
    for (Py_ssize_t i = 0; i < cells && status != STOPPED; i++) {
        if (upper ? xs[i] > lim[i] : xs[i] < lim[i])
            status = STOPPED;
    }
    answer = PyLong_FromLong(status);
done:
    PyMem_Free(start);
    PyMem_Free(moved);
    PyMem_Free(mask);
    PyBuffer_Release(&src);
    PyBuffer_Release(&dst);
    PyBuffer_Release(&w);
    PyBuffer_Release(&before);
    PyBuffer_Release(&type);
    PyBuffer_Release(&sources);
    PyBuffer_Release(&first);
    PyBuffer_Release(&extra);
    PyBuffer_Release(&cap);
    PyBuffer_Release(&stop);
    PyBuffer_Release(&x);
    return answer;
}

/* closure(src, dst, x, through, n_edges, n_rows, n): per row r, x[r] (bools, in place)
 * grown by every node an edge u -> v leads to from a node u of x[r] with through[r, u],
 * until nothing more is added: a depth-first search per row over the edges listed by
 * source (a counting sort, so the edges may come in any order). */
static PyObject *closure(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *src_o, *dst_o, *x_o, *through_o;
    Py_ssize_t n_edges, n_rows, n;
    if (!PyArg_ParseTuple(args, "OOOOnnn:closure", &src_o, &dst_o, &x_o, &through_o, &n_edges,
                          &n_rows, &n))
        return NULL;
    if (n_edges < 0 || n_rows < 0 || n < 0) {
        PyErr_SetString(PyExc_ValueError, "closure: negative size");
        return NULL;
    }
    Py_buffer src = {0}, dst = {0}, x = {0}, through = {0};
    Py_ssize_t *first = NULL, *by_src = NULL, *stack = NULL;
    PyObject *answer = NULL;
    Py_ssize_t cells = n_rows * n;
    if (n_rows && cells / n_rows != n) {
        PyErr_NoMemory();
        goto done;
    }
    if (src_o == Py_None || dst_o == Py_None || x_o == Py_None || through_o == Py_None) {
        PyErr_SetString(PyExc_TypeError, "closure: no argument may be None");
        goto done;
    }
    if (get_array(src_o, &src, n_edges, sizeof(int64_t), 0, "src") ||
        get_array(dst_o, &dst, n_edges, sizeof(int64_t), 0, "dst") ||
        get_array(x_o, &x, cells, 1, 1, "x") ||
        get_array(through_o, &through, cells, 1, 0, "through"))
        goto done;
    const int64_t *es = src.buf, *ed = dst.buf;
    if (edges_in_range(es, ed, n_edges, n, "closure"))
        goto done;
    first = PyMem_Malloc(((size_t)n + 1) * sizeof(Py_ssize_t));
    by_src = PyMem_Malloc((size_t)(n_edges ? n_edges : 1) * sizeof(Py_ssize_t));
    stack = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(Py_ssize_t));
    if (!first || !by_src || !stack) {
        PyErr_NoMemory();
        goto done;
    }
    by_source(es, n_edges, n, first, by_src);
    unsigned char *xs = x.buf;
    const unsigned char *ts = through.buf;
    for (Py_ssize_t r = 0; r < n_rows; r++) {
        unsigned char *xr = xs + r * n;
        const unsigned char *tr = ts + r * n;
        Py_ssize_t top = 0;
        for (Py_ssize_t u = 0; u < n; u++)
            if (xr[u] && tr[u])
                stack[top++] = u;
        while (top) { /* each node enters the stack at most once: when it joins x */
            Py_ssize_t u = stack[--top];
            for (Py_ssize_t i = first[u]; i < first[u + 1]; i++) {
                Py_ssize_t v = ed[by_src[i]];
                if (xr[v])
                    continue;
                xr[v] = 1;
                if (tr[v])
                    stack[top++] = v;
            }
        }
    }
    answer = Py_NewRef(Py_None);
done:
    PyMem_Free(first);
    PyMem_Free(by_src);
    PyMem_Free(stack);
    PyBuffer_Release(&src);
    PyBuffer_Release(&dst);
    PyBuffer_Release(&x);
    PyBuffer_Release(&through);
    return answer;
}

/* onward(src, dst, w, stop, through, out, n_edges, n_rows, n, upper): per row r, out[r, v]
 * (given as none everywhere) becomes the best over walks of >= 1 edge from v to a node x,
 * whose inner nodes are all through[r] nodes (through None: any), of the walk's total
 * minus stop[r, x], cut at 1 when upper: perfume_infer.onward_totals's rounds, row by row
 * (a row's rounds do not depend on the others'), each
 *
 *     val       = best(-stop[r, y], through[r, y] ? out[r, y] : none) + w   (edge u -> y)
 *     out[r, u] = best(out[r, u], best over u's edges of val)   (min 1 when upper)
 *
 * for at most n + 1 rounds, after the first over the edges into nodes the round before
 * changed: the totals of whole rounds, bit for bit. */
static PyObject *onward(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *src_o, *dst_o, *w_o, *stop_o, *through_o, *out_o;
    Py_ssize_t n_edges, n_rows, n;
    int upper;
    if (!PyArg_ParseTuple(args, "OOOOOOnnnp:onward", &src_o, &dst_o, &w_o, &stop_o, &through_o,
                          &out_o, &n_edges, &n_rows, &n, &upper))
        return NULL;
    if (n_edges < 0 || n_rows < 0 || n < 0) {
        PyErr_SetString(PyExc_ValueError, "onward: negative size");
        return NULL;
    }
    Py_buffer src = {0}, dst = {0}, w = {0}, stop = {0}, through = {0}, out = {0};
    double *cur = NULL;
    unsigned char *moved = NULL;
    PyObject *answer = NULL;
    Py_ssize_t cells = n_rows * n;
    if (n_rows && cells / n_rows != n) {
        PyErr_NoMemory();
        goto done;
    }
    if (src_o == Py_None || dst_o == Py_None || w_o == Py_None || stop_o == Py_None ||
        out_o == Py_None) {
        PyErr_SetString(PyExc_TypeError, "onward: only through may be None");
        goto done;
    }
    if (get_array(src_o, &src, n_edges, sizeof(int64_t), 0, "src") ||
        get_array(dst_o, &dst, n_edges, sizeof(int64_t), 0, "dst") ||
        get_array(w_o, &w, n_edges, sizeof(double), 0, "w") ||
        get_array(stop_o, &stop, cells, sizeof(double), 0, "stop") ||
        get_array(through_o, &through, cells, 1, 0, "through") ||
        get_array(out_o, &out, cells, sizeof(double), 1, "out"))
        goto done;
    const int64_t *es = src.buf, *ed = dst.buf;
    if (edges_in_range(es, ed, n_edges, n, "onward"))
        goto done;
    cur = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(double));
    moved = PyMem_Malloc((size_t)(n ? n : 1));
    if (!cur || !moved) {
        PyErr_NoMemory();
        goto done;
    }
    const double none = upper ? -INFINITY : INFINITY;
    const double *ew = w.buf, *lim = stop.buf;
    const unsigned char *ts = through.buf;
    double *os = out.buf;
    for (Py_ssize_t r = 0; r < n_rows; r++) {
        double *o = os + r * n;
        const double *sr = lim + r * n;
        const unsigned char *tr = ts ? ts + r * n : NULL;
        memset(moved, 1, (size_t)n);
        for (Py_ssize_t round = 0; round <= n; round++) {
            memcpy(cur, o, (size_t)n * sizeof(double)); /* the round before's totals */
            for (Py_ssize_t e = 0; e < n_edges; e++) {
                Py_ssize_t y = ed[e];
                if (!moved[y])
                    continue;
                double t = best(upper, -sr[y], (!tr || tr[y]) ? cur[y] : none) + ew[e];
                double *at = o + es[e];
                if (upper ? t > *at : t < *at)
                    *at = t;
            }
            int changed = 0;
            for (Py_ssize_t v = 0; v < n; v++) {
                if (upper && o[v] > 1.0)
                    o[v] = 1.0;
                moved[v] = o[v] != cur[v];
                changed |= moved[v];
            }
            if (!changed)
                break;
        }
    }
    answer = Py_NewRef(Py_None);
done:
    PyMem_Free(cur);
    PyMem_Free(moved);
    PyBuffer_Release(&src);
    PyBuffer_Release(&dst);
    PyBuffer_Release(&w);
    PyBuffer_Release(&stop);
    PyBuffer_Release(&through);
    PyBuffer_Release(&out);
    return answer;
}

/* The uint64 bitset rows x[rows][words] of check.py's untimed checks. */
typedef struct {
    Py_buffer frm, to, x, start, allowed, forbidden;
} Bits;

static void bits_release(Bits *b)
{
    PyBuffer_Release(&b->frm);
    PyBuffer_Release(&b->to);
    PyBuffer_Release(&b->x);
    PyBuffer_Release(&b->start);
    PyBuffer_Release(&b->allowed);
    PyBuffer_Release(&b->forbidden);
}

/* bits_gather(frm, to, x, out, n_edges, rows, words): out[v] (zeros on entry) |= x[u] over
 * the edges u -> v (check._Gather). */
static PyObject *bits_gather(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *frm_o, *to_o, *x_o, *out_o;
    Py_ssize_t n_edges, rows, words;
    if (!PyArg_ParseTuple(args, "OOOOnnn:bits_gather", &frm_o, &to_o, &x_o, &out_o, &n_edges,
                          &rows, &words))
        return NULL;
    Bits b = {0};
    PyObject *answer = NULL;
    Py_ssize_t cells = rows * words;
    if (n_edges < 0 || rows < 0 || words < 0 || (rows && cells / rows != words) ||
        frm_o == Py_None || to_o == Py_None || x_o == Py_None || out_o == Py_None) {
        PyErr_SetString(PyExc_ValueError, "bits_gather: bad sizes or a None");
        goto done;
    }
    if (get_array(frm_o, &b.frm, n_edges, sizeof(int64_t), 0, "frm") ||
        get_array(to_o, &b.to, n_edges, sizeof(int64_t), 0, "to") ||
        get_array(x_o, &b.x, cells, sizeof(uint64_t), 0, "x") ||
        get_array(out_o, &b.start, cells, sizeof(uint64_t), 1, "out"))
        goto done;
    const int64_t *fr = b.frm.buf, *tt = b.to.buf;
    if (edges_in_range(fr, tt, n_edges, rows, "bits_gather"))
        goto done;
    const uint64_t *x = b.x.buf;
    uint64_t *out = b.start.buf;
    for (Py_ssize_t e = 0; e < n_edges; e++) {
        const uint64_t *from = x + fr[e] * words;
        uint64_t *into = out + tt[e] * words;
        for (Py_ssize_t w = 0; w < words; w++)
            into[w] |= from[w];
    }
    answer = Py_NewRef(Py_None);
done:
    bits_release(&b);
    return answer;
}

/* bits_grow(frm, to, start, x, allowed, forbidden, n_edges, rows, words) -> bool: x (in
 * place; start <= x <= the answer on entry) becomes the least X >= start with
 * X = start | (gather(X) & allowed), gather(X)[v] the or of X[u] over the edges u -> v
 * (check._grow). Bits are added in place along a work list: every node once, then each
 * node whose row gained bits passes them on over its edges (listed by source), until no
 * row gains any. X only grows and stays below that least fix-point, and stops at a set
 * closed under the rule, so it ends at the same fix-point as check._grow's whole rounds,
 * in O(edges x words) per bit a row gains (passes over every edge until none adds a bit
 * took O(nodes) passes on a trace chain). False as soon as X meets forbidden (None:
 * never): X only grows, so the fix-point meets it too. */
static PyObject *bits_grow(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *frm_o, *to_o, *start_o, *x_o, *allowed_o, *forbidden_o;
    Py_ssize_t n_edges, rows, words;
    if (!PyArg_ParseTuple(args, "OOOOOOnnn:bits_grow", &frm_o, &to_o, &start_o, &x_o,
                          &allowed_o, &forbidden_o, &n_edges, &rows, &words))
        return NULL;
    Bits b = {0};
    PyObject *answer = NULL;
    Py_ssize_t *first = NULL, *order = NULL, *queue = NULL;
    unsigned char *queued = NULL;
    Py_ssize_t cells = rows * words;
    if (n_edges < 0 || rows < 0 || words < 0 || (rows && cells / rows != words) ||
        frm_o == Py_None || to_o == Py_None || start_o == Py_None || x_o == Py_None ||
        allowed_o == Py_None) {
        PyErr_SetString(PyExc_ValueError, "bits_grow: bad sizes or a None");
        goto done;
    }
    if (get_array(frm_o, &b.frm, n_edges, sizeof(int64_t), 0, "frm") ||
        get_array(to_o, &b.to, n_edges, sizeof(int64_t), 0, "to") ||
        get_array(start_o, &b.start, cells, sizeof(uint64_t), 0, "start") ||
        get_array(x_o, &b.x, cells, sizeof(uint64_t), 1, "x") ||
        get_array(allowed_o, &b.allowed, cells, sizeof(uint64_t), 0, "allowed") ||
        get_array(forbidden_o, &b.forbidden, cells, sizeof(uint64_t), 0, "forbidden"))
        goto done;
    const int64_t *fr = b.frm.buf, *tt = b.to.buf;
    if (edges_in_range(fr, tt, n_edges, rows, "bits_grow"))
        goto done;
    uint64_t *x = b.x.buf;
    const uint64_t *st = b.start.buf, *ok = b.allowed.buf, *bad = b.forbidden.buf;
    int met = 0;
    for (Py_ssize_t i = 0; i < cells; i++) {
        x[i] |= st[i];
        if (bad && (x[i] & bad[i]))
            met = 1;
    }
    if (met)
        goto answer;
    first = PyMem_Malloc((size_t)(rows + 1) * sizeof(Py_ssize_t));
    order = PyMem_Malloc((size_t)(n_edges ? n_edges : 1) * sizeof(Py_ssize_t));
    queue = PyMem_Malloc((size_t)(rows ? rows : 1) * sizeof(Py_ssize_t));
    queued = PyMem_Malloc((size_t)(rows ? rows : 1));
    if (!first || !order || !queue || !queued) {
        PyErr_NoMemory();
        goto done;
    }
    by_source(fr, n_edges, rows, first, order);
    /* a ring of the queued nodes: each node at most once in it, so rows slots suffice */
    Py_ssize_t head = 0, size = rows;
    for (Py_ssize_t u = 0; u < rows; u++) {
        queue[u] = u;
        queued[u] = 1;
    }
    while (size && !met) {
        Py_ssize_t u = queue[head];
        head = head + 1 == rows ? 0 : head + 1;
        size--;
        queued[u] = 0;
        const uint64_t *from = x + u * words;
        for (Py_ssize_t i = first[u]; i < first[u + 1] && !met; i++) {
            Py_ssize_t v = tt[order[i]], at = v * words, gained = 0;
            for (Py_ssize_t w = 0; w < words; w++) {
                uint64_t add = from[w] & ok[at + w] & ~x[at + w];
                if (!add)
                    continue;
                x[at + w] |= add;
                gained = 1;
                if (bad && (add & bad[at + w]))
                    met = 1;
            }
            if (gained && !queued[v]) {
                Py_ssize_t tail = head + size;
                queue[tail >= rows ? tail - rows : tail] = v;
                size++;
                queued[v] = 1;
            }
        }
    }
answer:
    answer = PyBool_FromLong(!met);
done:
    PyMem_Free(first);
    PyMem_Free(order);
    PyMem_Free(queue);
    PyMem_Free(queued);
    bits_release(&b);
    return answer;
}

/* doomed(totals, onward, reach, sources, node_type, keeps, gone, upper, first, out,
 * n_rows, n, n_keeps): perfume_infer._TimedMerges's doomed-merge rules for one bound
 * group, out[j] set (never cleared) when merging node keeps[j] and node gone must break a
 * bound of the group.  totals, onward: rows x n doubles (the current walk totals, the
 * walks out of each node); own = sources[r] == node_type[keeps[j]].
 *
 * Every (a, later b) pair (first 0):
 *     s = own ? best(totals, 0) : totals;  s[keep] + onward[gone] or s[gone] +
 *     onward[keep] past 0 (upper: > 0, else < 0)
 * AlwaysPrecedes' first-a walks (first 1, upper; reach: rows x n bools, the first-a reach):
 *     own: reach[keep] and onward[gone] > 0, or reach[gone] and onward[keep] > 0
 *     else: totals[keep] + onward[gone] > 0 or totals[gone] + onward[keep] > 0
 * (the numpy rules they replaced, in the same operations on the same doubles.) */
static PyObject *doomed(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *tot_o, *onw_o, *reach_o, *src_o, *type_o, *keeps_o, *out_o;
    Py_ssize_t gone, n_rows, n, n_keeps;
    int upper, first;
    if (!PyArg_ParseTuple(args, "OOOOOOnppOnnn:doomed", &tot_o, &onw_o, &reach_o, &src_o,
                          &type_o, &keeps_o, &gone, &upper, &first, &out_o, &n_rows, &n,
                          &n_keeps))
        return NULL;
    if (n_rows < 0 || n < 0 || n_keeps < 0) {
        PyErr_SetString(PyExc_ValueError, "doomed: negative size");
        return NULL;
    }
    Py_buffer tot = {0}, onw = {0}, reach = {0}, src = {0}, type = {0}, keeps = {0},
              out = {0};
    PyObject *answer = NULL;
    Py_ssize_t cells = n_rows * n;
    if (n_rows && cells / n_rows != n) {
        PyErr_NoMemory();
        goto done;
    }
    if (tot_o == Py_None || onw_o == Py_None || src_o == Py_None || type_o == Py_None ||
        keeps_o == Py_None || out_o == Py_None || (first && reach_o == Py_None)) {
        PyErr_SetString(PyExc_TypeError, "doomed: only reach may be None, and not when first");
        goto done;
    }
    if (get_array(tot_o, &tot, cells, sizeof(double), 0, "totals") ||
        get_array(onw_o, &onw, cells, sizeof(double), 0, "onward") ||
        get_array(reach_o, &reach, cells, 1, 0, "reach") ||
        get_array(src_o, &src, n_rows, sizeof(int64_t), 0, "sources") ||
        get_array(type_o, &type, n, sizeof(int64_t), 0, "node_type") ||
        get_array(keeps_o, &keeps, n_keeps, sizeof(int64_t), 0, "keeps") ||
        get_array(out_o, &out, n_keeps, 1, 1, "out"))
        goto done;
    const int64_t *kp = keeps.buf;
    if (gone < 0 || gone >= n) {
        PyErr_SetString(PyExc_ValueError, "doomed: gone names no node");
        goto done;
    }
    for (Py_ssize_t j = 0; j < n_keeps; j++) {
        if (kp[j] < 0 || kp[j] >= n) {
            PyErr_SetString(PyExc_ValueError, "doomed: a keep names no node");
            goto done;
        }
    }
    const double *tt = tot.buf, *ow = onw.buf;
    const unsigned char *rc = reach.buf;
    const int64_t *sr = src.buf, *nt = type.buf;
    unsigned char *o = out.buf;
    const double none = upper ? -INFINITY : INFINITY;
    for (Py_ssize_t j = 0; j < n_keeps; j++) {
        Py_ssize_t k = kp[j];
        for (Py_ssize_t r = 0; r < n_rows && !o[j]; r++) {
            const double *t = tt + r * n, *w = ow + r * n;
            int own = sr[r] == nt[k];
            if (first) {
                if (own)
                    o[j] = (rc[r * n + k] && w[gone] > 0) || (rc[r * n + gone] && w[k] > 0);
                else
                    o[j] = t[k] + w[gone] > 0 || t[gone] + w[k] > 0;
                continue;
            }
            double start = own ? 0.0 : none;
            double into_keep = best(upper, t[k], start) + w[gone];
            double into_gone = best(upper, t[gone], start) + w[k];
            o[j] = upper ? (into_keep > 0 || into_gone > 0) : (into_keep < 0 || into_gone < 0);
        }
    }
    answer = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&tot);
    PyBuffer_Release(&onw);
    PyBuffer_Release(&reach);
    PyBuffer_Release(&src);
    PyBuffer_Release(&type);
    PyBuffer_Release(&keeps);
    PyBuffer_Release(&out);
    return answer;
}

/* One edge of merge_edges's lists: its key (src * n + dst) and range. */
typedef struct {
    int64_t key;
    double lo, hi;
} Edge;

static int edge_order(const void *a, const void *b)
{
    int64_t x = ((const Edge *)a)->key, y = ((const Edge *)b)->key;
    return (x > y) - (x < y);
}

/* merge_edges(src, dst, wmin, wmax, n_edges, n, keep, gone, out_src, out_dst, out_wmin,
 * out_wmax) -> m: the edges src[e] -> dst[e] (sorted by src * n + dst, each pair once, as
 * timecheck.aggregate_edges leaves them) with node gone renamed keep, parallel edges made
 * one (min of wmin, max of wmax), in the first m entries of the out arrays (n_edges
 * long), sorted the same way: aggregate_edges of the renamed edges, which min and max
 * make the same whether taken at once or in two stages.  The edges not touching gone keep
 * their order; the few that do are sorted and merged in. */
static PyObject *merge_edges(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *src_o, *dst_o, *lo_o, *hi_o, *osrc_o, *odst_o, *olo_o, *ohi_o;
    Py_ssize_t n_edges, n, keep, gone;
    if (!PyArg_ParseTuple(args, "OOOOnnnnOOOO:merge_edges", &src_o, &dst_o, &lo_o, &hi_o,
                          &n_edges, &n, &keep, &gone, &osrc_o, &odst_o, &olo_o, &ohi_o))
        return NULL;
    if (n_edges < 0 || n < 0) {
        PyErr_SetString(PyExc_ValueError, "merge_edges: negative size");
        return NULL;
    }
    Py_buffer src = {0}, dst = {0}, lo = {0}, hi = {0}, osrc = {0}, odst = {0}, olo = {0},
              ohi = {0};
    Edge *moved = NULL;
    PyObject *answer = NULL;
    if (src_o == Py_None || dst_o == Py_None || lo_o == Py_None || hi_o == Py_None ||
        osrc_o == Py_None || odst_o == Py_None || olo_o == Py_None || ohi_o == Py_None) {
        PyErr_SetString(PyExc_TypeError, "merge_edges: no array may be None");
        goto done;
    }
    if (get_array(src_o, &src, n_edges, sizeof(int64_t), 0, "src") ||
        get_array(dst_o, &dst, n_edges, sizeof(int64_t), 0, "dst") ||
        get_array(lo_o, &lo, n_edges, sizeof(double), 0, "wmin") ||
        get_array(hi_o, &hi, n_edges, sizeof(double), 0, "wmax") ||
        get_array(osrc_o, &osrc, n_edges, sizeof(int64_t), 1, "out_src") ||
        get_array(odst_o, &odst, n_edges, sizeof(int64_t), 1, "out_dst") ||
        get_array(olo_o, &olo, n_edges, sizeof(double), 1, "out_wmin") ||
        get_array(ohi_o, &ohi, n_edges, sizeof(double), 1, "out_wmax"))
        goto done;
    const int64_t *es = src.buf, *ed = dst.buf;
    const double *el = lo.buf, *eh = hi.buf;
    if (edges_in_range(es, ed, n_edges, n, "merge_edges"))
        goto done;
    if (keep < 0 || keep >= n || gone < 0 || gone >= n) {
        PyErr_SetString(PyExc_ValueError, "merge_edges: keep or gone names no node");
        goto done;
    }
    for (Py_ssize_t e = 1; e < n_edges; e++) {
        if (es[e - 1] * n + ed[e - 1] >= es[e] * n + ed[e]) {
            PyErr_SetString(PyExc_ValueError, "merge_edges: edges not sorted, or repeated");
            goto done;
        }
    }
    Py_ssize_t n_moved = 0;
    for (Py_ssize_t e = 0; e < n_edges; e++)
        n_moved += es[e] == gone || ed[e] == gone;
    moved = PyMem_Malloc((size_t)(n_moved ? n_moved : 1) * sizeof(Edge));
    if (!moved) {
        PyErr_NoMemory();
        goto done;
    }
    n_moved = 0;
    for (Py_ssize_t e = 0; e < n_edges; e++) {
        if (es[e] != gone && ed[e] != gone)
            continue;
        int64_t u = es[e] == gone ? keep : es[e], v = ed[e] == gone ? keep : ed[e];
        moved[n_moved++] = (Edge){u * n + v, el[e], eh[e]};
    }
    qsort(moved, (size_t)n_moved, sizeof(Edge), edge_order);
    int64_t *os = osrc.buf, *od = odst.buf;
    double *ol = olo.buf, *oh = ohi.buf;
    Py_ssize_t m = 0, i = 0, j = 0;
    while (i < n_edges || j < n_moved) {
        while (i < n_edges && (es[i] == gone || ed[i] == gone))
            i++;
        Edge next;
        if (j < n_moved && (i >= n_edges || moved[j].key < es[i] * n + ed[i]))
            next = moved[j++];
        else if (i < n_edges) {
            next = (Edge){es[i] * n + ed[i], el[i], eh[i]};
            i++;
        } else
            break;
        if (m && os[m - 1] * n + od[m - 1] == next.key) {
            if (next.lo < ol[m - 1])
                ol[m - 1] = next.lo;
            if (next.hi > oh[m - 1])
                oh[m - 1] = next.hi;
            continue;
        }
        os[m] = next.key / n;
        od[m] = next.key % n;
        ol[m] = next.lo;
        oh[m] = next.hi;
        m++;
    }
    answer = PyLong_FromSsize_t(m);
done:
    PyMem_Free(moved);
    PyBuffer_Release(&src);
    PyBuffer_Release(&dst);
    PyBuffer_Release(&lo);
    PyBuffer_Release(&hi);
    PyBuffer_Release(&osrc);
    PyBuffer_Release(&odst);
    PyBuffer_Release(&olo);
    PyBuffer_Release(&ohi);
    return answer;
}

static PyMethodDef methods[] = {
    {"merged_rounds", merged_rounds, METH_VARARGS,
     "merged_rounds(src, dst, w, before, keep, gone, node_type, sources, first, extra, cap, "
     "stop, x, n_edges, n_rows, n, upper, rounds) -> status: one bound group's walk rounds "
     "after merging gone into keep, from the totals before; x holds the totals."},
    {"merge_edges", merge_edges, METH_VARARGS,
     "merge_edges(src, dst, wmin, wmax, n_edges, n, keep, gone, out_src, out_dst, out_wmin, "
     "out_wmax) -> m: the sorted edge list with gone renamed keep, parallel edges made one."},
    {"doomed", doomed, METH_VARARGS,
     "doomed(totals, onward, reach, sources, node_type, keeps, gone, upper, first, out, "
     "n_rows, n, n_keeps) -> None: out[j] set where merging keeps[j] and gone must break "
     "a bound of the group."},
    {"bits_gather", bits_gather, METH_VARARGS,
     "bits_gather(frm, to, x, out, n_edges, rows, words) -> None: out[v] |= x[u] per edge."},
    {"bits_grow", bits_grow, METH_VARARGS,
     "bits_grow(frm, to, start, x, allowed, forbidden, n_edges, rows, words) -> bool: x "
     "grown in place to the least fix-point; False once it meets forbidden."},
    {"onward", onward, METH_VARARGS,
     "onward(src, dst, w, stop, through, out, n_edges, n_rows, n, upper) -> None: out (rows "
     "x n doubles, none everywhere on entry) set to onward_totals's answer."},
    {"closure", closure, METH_VARARGS,
     "closure(src, dst, x, through, n_edges, n_rows, n) -> None: x (rows x n bools) grown "
     "in place by the nodes reached over edges that leave its through nodes."},
    {"relax_rounds", relax_rounds, METH_VARARGS,
     "relax_rounds(src, dst, w, x, start, mask, cap, stop, cyclic, n_edges, n_rows, n, upper, "
     "rounds) "
     "-> 0 (settled), 1 (a total passed stop) or 2 (still growing after rounds rounds); "
     "x (rows x n doubles) holds the totals after the last round."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_walks", "Perfume's walk totals and reach in C.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__walks(void) { return PyModule_Create(&module); }
