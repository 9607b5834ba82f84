/* Sorting and selection over one kind of item, included by sort.h once per item kind.
 *
 * An item is a sort key plus the element's index in its row, and items compare by key, then
 * by index.  So every item is distinct, any algorithm here gives the order a stable sort
 * would, and selection has no ties to worry about.  The includer defines:
 *   TL_ITEM            the item type
 *   TL_LT(a, b)        a orders before b
 *   TL_KEY(a)          the key of a
 *   TL_DIGIT(a, s)     the key bits of a from bit s upward (masked by the caller)
 *   TL_IDX_DIGIT(a, s) the index bits of a from bit s upward (likewise)
 *   TL_MAKE(key, i)    the item for key `key` at index i
 *   TL_IDX(a)          the index of a
 *   TL_S(name)         name with the item kind's suffix
 * Item keys are row keys made relative: (key ^ row->flip) - row->base (see tl_row in sort.h).
 */

/* Insertion sort: the fastest for the handful of items in a short row. */
static void TL_S(tl_insertion)(TL_ITEM *a, int64_t n) {
    for (int64_t i = 1; i < n; i++) {
        TL_ITEM x = a[i];
        int64_t j = i;
        while (j > 0 && TL_LT(x, a[j - 1])) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = x;
    }
}

/* LSD radix sort of a[0..n) by the item order, ping-ponging with tmp.  Returns the buffer
 * that holds the result (a or tmp).  The passes cover the low `idx_bits` bits of the index,
 * then `key_bits` key bits: items built in index order need no index passes (idx_bits 0),
 * since the sort is stable.  hist needs TL_SORT_HIST_LEN int64 slots.  Passes whose digit is
 * the same for every item are skipped, so small key ranges cost fewer passes. */
static TL_ITEM *TL_S(tl_radix)(TL_ITEM *a, TL_ITEM *tmp, int64_t n, int key_bits, int idx_bits,
                               int64_t *hist) {
    if (n <= TL_SORT_SMALL) {
        TL_S(tl_insertion)(a, n);
        return a;
    }
    const int bits = n >= 65536 ? 11 : 8;        /* 2048 buckets once they pay for themselves */
    const int64_t nb = (int64_t)1 << bits;
    const uint64_t mask = (uint64_t)nb - 1;
    const int ipasses = (idx_bits + bits - 1) / bits;
    const int passes = ipasses + (key_bits + bits - 1) / bits;
#define TL_PASS_DIGIT(x, p) \
    (((p) < ipasses ? TL_IDX_DIGIT(x, (p) * bits) : TL_DIGIT(x, ((p) - ipasses) * bits)) & mask)
    memset(hist, 0, sizeof(int64_t) * (size_t)(passes * nb));
    for (int64_t i = 0; i < n; i++)
        for (int p = 0; p < passes; p++)
            hist[p * nb + (int64_t)TL_PASS_DIGIT(a[i], p)]++;
    for (int p = 0; p < passes; p++) {
        int64_t *h = hist + p * nb;
        if (h[TL_PASS_DIGIT(a[0], p)] == n)
            continue;                                /* one bucket holds everything */
        int64_t sum = 0;
        for (int64_t b = 0; b < nb; b++) {
            int64_t c = h[b];
            h[b] = sum;
            sum += c;
        }
        for (int64_t i = 0; i < n; i++)
            tmp[h[TL_PASS_DIGIT(a[i], p)]++] = a[i];
        TL_ITEM *t = a;
        a = tmp;
        tmp = t;
    }
#undef TL_PASS_DIGIT
    return a;
}

/* Sort items of row indices below 2^idx_bits, in any order, in place (tmp: n items). */
static void TL_S(tl_sort_items)(TL_ITEM *a, TL_ITEM *tmp, int64_t n, int key_bits, int idx_bits,
                                int64_t *hist) {
    TL_ITEM *r = TL_S(tl_radix)(a, tmp, n, key_bits, idx_bits, hist);
    if (r != a)
        memcpy(a, r, sizeof(TL_ITEM) * (size_t)n);
}

static void TL_S(tl_sort3)(TL_ITEM *a, int64_t i, int64_t j, int64_t k) {
    TL_ITEM t;
    if (TL_LT(a[j], a[i])) { t = a[i]; a[i] = a[j]; a[j] = t; }
    if (TL_LT(a[k], a[j])) { t = a[j]; a[j] = a[k]; a[k] = t; }
    if (TL_LT(a[j], a[i])) { t = a[i]; a[i] = a[j]; a[j] = t; }
}

/* Rearrange a[0..n) so that a[0..k) hold the k smallest items and a[k-1] is the k-th
 * smallest (1 <= k <= n).  Quickselect with a median-of-3 pivot and a branch-free
 * partition; after too many rounds (an adversarial input) the rest is radix sorted, so the
 * worst case stays linear in n times the key passes. */
static void TL_S(tl_select)(TL_ITEM *a, TL_ITEM *tmp, int64_t n, int64_t k, int key_bits,
                            int idx_bits, int64_t *hist) {
    int64_t lo = 0, hi = n, target = k - 1;
    int rounds = 0;
    while (hi - lo > TL_SORT_SMALL) {
        if (++rounds > 64) {
            TL_S(tl_sort_items)(a + lo, tmp, hi - lo, key_bits, idx_bits, hist);
            return;
        }
        int64_t mid = lo + (hi - lo) / 2;
        TL_S(tl_sort3)(a, lo, mid, hi - 1);
        TL_ITEM pivot = a[mid];
        a[mid] = a[hi - 1];
        a[hi - 1] = pivot;
        int64_t i = lo;
        for (int64_t j = lo; j < hi - 1; j++) {     /* a[lo..i) < pivot <= a[i..j] */
            TL_ITEM x = a[j];
            int smaller = TL_LT(x, pivot);
            a[j] = a[i];
            a[i] = x;
            i += smaller;
        }
        a[hi - 1] = a[i];
        a[i] = pivot;
        if (i == target)
            return;
        if (target < i)
            hi = i;
        else
            lo = i + 1;
    }
    TL_S(tl_insertion)(a + lo, hi - lo);
}

/* Max-heap of the k smallest items seen so far: sift item i down. */
static void TL_S(tl_sift_down)(TL_ITEM *h, int64_t k, int64_t i) {
    TL_ITEM x = h[i];
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= k)
            break;
        if (c + 1 < k && TL_LT(h[c], h[c + 1]))
            c++;
        if (!TL_LT(x, h[c]))
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

/* The items of row elements [start, start+n). */
static void TL_S(tl_make_items)(const tl_row *row, int64_t start, int64_t n, TL_ITEM *out) {
    uint64_t keys[TL_SORT_BLOCK];
    for (int64_t b = 0; b < n; b += TL_SORT_BLOCK) {
        int64_t cnt = n - b < TL_SORT_BLOCK ? n - b : TL_SORT_BLOCK;
        tl_row_keys(row->src, row->ss, start + b, cnt, row->dtype, keys);
        for (int64_t j = 0; j < cnt; j++)
            out[b + j] = TL_MAKE((keys[j] ^ row->flip) - row->base, start + b + j);
    }
}

/* Values of the items, rebuilt from their keys; float keys of zero and NaN are read back from
 * the row instead, since the key merges -0.0 with +0.0 and every NaN payload. */
#define TL_VAL_LOOP(CT, UNKEY, C, SPECIAL)                                     \
    do {                                                                        \
        CT *o = (CT *)vdst;                                                     \
        const CT *s = (const CT *)row->src;                                     \
        for (int64_t j = 0; j < n; j++) {                                       \
            uint64_t key = ((uint64_t)TL_KEY(a[j]) + row->base) ^ row->flip;    \
            CT v;                                                               \
            if (SPECIAL(key)) {                                                 \
                v = s[(int64_t)TL_IDX(a[j]) * row->ss];                         \
            } else {                                                            \
                v = (CT)UNKEY(key, C);                                          \
            }                                                                   \
            o[j * vs] = v;                                                      \
        }                                                                       \
    } while (0)

static void TL_S(tl_write_out)(const TL_ITEM *a, int64_t n, const tl_row *row, char *vdst,
                               int64_t vs, int64_t *idst, int64_t is) {
    if (idst)
        for (int64_t j = 0; j < n; j++)
            idst[j * is] = (int64_t)TL_IDX(a[j]);
    if (!vdst)
        return;
    switch (row->dtype) {
    case TL_BOOL: case TL_UINT8: TL_VAL_LOOP(uint8_t, TL_UNKEY_INT, 0, TL_NEVER); break;
    case TL_INT8: TL_VAL_LOOP(uint8_t, TL_UNKEY_INT, 0x80u, TL_NEVER); break;
    case TL_INT16: TL_VAL_LOOP(uint16_t, TL_UNKEY_INT, 0x8000u, TL_NEVER); break;
    case TL_INT32: TL_VAL_LOOP(uint32_t, TL_UNKEY_INT, 0x80000000u, TL_NEVER); break;
    case TL_INT64: TL_VAL_LOOP(uint64_t, TL_UNKEY_INT, 0x8000000000000000ull, TL_NEVER); break;
    case TL_FLOAT16: case TL_BFLOAT16:
        TL_VAL_LOOP(uint16_t, TL_UNKEY_FLT, 0x8000u, TL_SPECIAL16); break;
    case TL_FLOAT32:
        TL_VAL_LOOP(uint32_t, TL_UNKEY_FLT, 0x80000000u, TL_SPECIAL32); break;
    default:
        TL_VAL_LOOP(uint64_t, TL_UNKEY_FLT, 0x8000000000000000ull, TL_SPECIAL64);
        break;
    }
}
#undef TL_VAL_LOOP

/* Sort one row; the order (descending or not) is in row->flip. */
static void TL_S(tl_sort_row)(const tl_row *row, char *vdst, int64_t vs, int64_t *idst,
                              int64_t is, void *scratch) {
    int64_t *hist = (int64_t *)scratch;
    TL_ITEM *a = (TL_ITEM *)(hist + TL_SORT_HIST_LEN), *tmp = a + row->n;
    TL_S(tl_make_items)(row, 0, row->n, a);
    TL_ITEM *r = TL_S(tl_radix)(a, tmp, row->n, row->key_bits, 0, hist);
    TL_S(tl_write_out)(r, row->n, row, vdst, vs, idst, is);
}

/* The k smallest items of a row, in order.  Small k: one pass with a k-item heap over blocks
 * of items built in L1, so most elements cost one compare.  Larger k: quickselect, then sort
 * just the first k. */
static void TL_S(tl_topk_row)(const tl_row *row, int64_t k, char *vdst, int64_t vs,
                              int64_t *idst, int64_t is, void *scratch) {
    int64_t *hist = (int64_t *)scratch, n = row->n;
    TL_ITEM *a = (TL_ITEM *)(hist + TL_SORT_HIST_LEN);
    int ib = tl_bit_length((uint64_t)(n - 1));     /* selection leaves items out of index order */
    if (k == 0)
        return;
    if (tl_topk_use_heap(n, k)) {
        TL_ITEM *tmp = a + k, blk[TL_SORT_BLOCK];
        TL_S(tl_make_items)(row, 0, k, a);
        for (int64_t i = k / 2 - 1; i >= 0; i--)
            TL_S(tl_sift_down)(a, k, i);
        for (int64_t b = k; b < n; b += TL_SORT_BLOCK) {
            int64_t cnt = n - b < TL_SORT_BLOCK ? n - b : TL_SORT_BLOCK;
            TL_S(tl_make_items)(row, b, cnt, blk);
            for (int64_t j = 0; j < cnt; j++) {
                if (TL_LT(blk[j], a[0])) {
                    a[0] = blk[j];
                    TL_S(tl_sift_down)(a, k, 0);
                }
            }
        }
        TL_S(tl_sort_items)(a, tmp, k, row->key_bits, ib, hist);
    } else {
        TL_ITEM *tmp = a + n;
        TL_S(tl_make_items)(row, 0, n, a);
        if (k < n)
            TL_S(tl_select)(a, tmp, n, k, row->key_bits, ib, hist);
        TL_S(tl_sort_items)(a, tmp, k, row->key_bits, ib, hist);
    }
    TL_S(tl_write_out)(a, k, row, vdst, vs, idst, is);
}

/* The k-th smallest element of a row (1 <= k <= n): its value and index. */
static void TL_S(tl_kth_row)(const tl_row *row, int64_t k, char *vdst, int64_t *idst,
                             void *scratch) {
    int64_t *hist = (int64_t *)scratch;
    TL_ITEM *a = (TL_ITEM *)(hist + TL_SORT_HIST_LEN), *tmp = a + row->n;
    TL_S(tl_make_items)(row, 0, row->n, a);
    TL_S(tl_select)(a, tmp, row->n, k, row->key_bits, tl_bit_length((uint64_t)(row->n - 1)), hist);
    TL_S(tl_write_out)(a + k - 1, 1, row, vdst, 0, idst, 0);
}

/* the parameters of this instantiation end here, so the next one can define its own */
#undef TL_ITEM
#undef TL_LT
#undef TL_KEY
#undef TL_DIGIT
#undef TL_IDX_DIGIT
#undef TL_MAKE
#undef TL_IDX
#undef TL_S
