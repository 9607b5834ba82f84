/* The reduction ops of reduction.cu: accumulator type, identity, step (add one element),
 * combine (a holds earlier elements than b) and store.  Host-and-device, so tests run them
 * on the host against the CPU's reductions. */
#ifndef TL_REDUCE_CUH
#define TL_REDUCE_CUH
#include "tl_common.cuh"

namespace tl {

struct ReduceArgs {
    i64 num_outputs;
    i64 reduce_size;
    i64 chunk;          /* elements per block along gridDim.y (reduce_size when it is 1) */
    i32 x_is_reduce;
    i32 pad_;
    void* ws;           /* gridDim.y > 1: num_outputs * gridDim.y accumulators */
    u32* sem;           /* gridDim.y > 1: gridDim.x counters, zero (and left zero) */
};

namespace red {

template <class T> TL_HD bool is_nan(T x) {
    if constexpr (is_float<T>::value) return x != x; else return false;
}

/* The output type of sum and prod: the input's for floating types, else int64. */
template <class T> struct sum_out { typedef i64 type; };
template <> struct sum_out<float> { typedef float type; };
template <> struct sum_out<double> { typedef double type; };
#if TL_HAS_HALF
template <> struct sum_out<f16> { typedef f16 type; };
template <> struct sum_out<bf16> { typedef bf16 type; };
#endif

/* Each op: In, Acc, identity(), step(acc, x, r) (add element x, number r), combine(a, b)
 * (a holds earlier elements than b) and store(acc, n, params, out0, o0, out1, o1). */
template <class T> struct Sum {
    typedef T In;
    typedef typename acc<T>::type Acc;
    typedef typename sum_out<T>::type Out;
    TL_HD Acc identity() const { return Acc(0); }
    TL_HD Acc combine(Acc a, Acc b) const {
        if constexpr (is_float<Acc>::value) return a + b; else return (Acc)((u64)a + (u64)b);
    }
    TL_HD Acc step(Acc a, T x, i64) const { return combine(a, (Acc)load(x)); }
    TL_HD void store(Acc a, i64, const Params&, void* out0, i64 o0, void*, i64) const {
        ((Out*)out0)[o0] = cvt<Out>::from(a);
    }
};

template <class T> struct NanSum : Sum<T> {
    typedef typename acc<T>::type Acc;
    TL_HD Acc step(Acc a, T x, i64) const {
        const Acc v = (Acc)load(x);
        return v != v ? a : a + v;
    }
};

template <class T> struct Prod {
    typedef T In;
    typedef typename acc<T>::type Acc;
    typedef typename sum_out<T>::type Out;
    TL_HD Acc identity() const { return Acc(1); }
    TL_HD Acc combine(Acc a, Acc b) const {
        if constexpr (is_float<Acc>::value) return a * b; else return (Acc)((u64)a * (u64)b);
    }
    TL_HD Acc step(Acc a, T x, i64) const { return combine(a, (Acc)load(x)); }
    TL_HD void store(Acc a, i64, const Params&, void* out0, i64 o0, void*, i64) const {
        ((Out*)out0)[o0] = cvt<Out>::from(a);
    }
};

template <class T> struct Mean : Sum<T> {
    typedef typename acc<T>::type Acc;
    TL_HD void store(Acc a, i64 n, const Params&, void* out0, i64 o0, void*, i64) const {
        ((T*)out0)[o0] = cvt<T>::from(a / (double)n);    /* 0 / 0 = NaN for empty */
    }
};

/* max/min with the index of the first extreme; NaN counts as the extreme (the first NaN
 * wins).  out0 (values, type T) and out1 (int64 indices) may each be null. */
template <class C> struct ValIdx { C v; i64 i; };

template <class T, bool IS_MAX> struct Extreme {
    typedef T In;
    typedef typename compute<T>::type C;
    typedef ValIdx<C> Acc;
    TL_HD Acc identity() const {
        Acc a;
        a.v = IS_MAX ? limits<C>::lowest() : limits<C>::highest();
        a.i = limits<i64>::highest();       /* loses every tie to a real element */
        return a;
    }
    TL_HD static bool better(C x, C y) { return IS_MAX ? x > y : x < y; }
    TL_HD Acc combine(Acc a, Acc b) const {
        const bool an = is_nan(a.v), bn = is_nan(b.v);
        if (an || bn) {
            if (an && bn) return a.i <= b.i ? a : b;
            return an ? a : b;
        }
        if (better(b.v, a.v)) return b;
        if (better(a.v, b.v)) return a;
        return a.i <= b.i ? a : b;
    }
    TL_HD Acc step(Acc a, T x, i64 r) const {
        Acc b;
        b.v = load(x);
        b.i = r;
        return combine(a, b);
    }
    TL_HD void store(Acc a, i64, const Params&, void* out0, i64 o0, void* out1, i64 o1) const {
        if (out0) ((T*)out0)[o0] = cvt<T>::from(a.v);
        if (out1) ((i64*)out1)[o1] = a.i;
    }
};
template <class T> struct Max : Extreme<T, true> {};
template <class T> struct Min : Extreme<T, false> {};

/* var/std by Welford's updates and Chan's combine.  s[0] = correction (the divisor is
 * max(0, n - correction)), s[1] != 0 takes the square root; out0 var or std, out1 (may be
 * null) the mean (var_mean, std_mean). */
struct Welford { double mean, m2, n; };

template <class T> struct VarStd {
    typedef T In;
    typedef Welford Acc;
    TL_HD Acc identity() const { Acc a; a.mean = 0; a.m2 = 0; a.n = 0; return a; }
    TL_HD Acc combine(Acc a, Acc b) const {
        if (a.n == 0) return b;
        if (b.n == 0) return a;
        Acc c;
        c.n = a.n + b.n;
        const double d = b.mean - a.mean;
        c.mean = a.mean + d * (b.n / c.n);
        c.m2 = a.m2 + b.m2 + d * d * (a.n * b.n / c.n);
        return c;
    }
    TL_HD Acc step(Acc a, T x, i64) const {
        const double v = (double)load(x);
        a.n += 1;
        const double d = v - a.mean;
        a.mean += d / a.n;
        a.m2 += d * (v - a.mean);
        return a;
    }
    TL_HD void store(Acc a, i64, const Params& p, void* out0, i64 o0, void* out1, i64 o1) const {
        const double denom = a.n - p.s[0] > 0 ? a.n - p.s[0] : 0.0;
        double var = a.m2 / denom;
        if (a.n == 0) var = bits_f64(0x7ff8000000000000ull);   /* NaN for an empty input */
        const double r = p.s[1] != 0 ? sqrt(var) : var;
        ((T*)out0)[o0] = cvt<T>::from(r);
        if (out1) ((T*)out1)[o1] = cvt<T>::from(a.n == 0 ? var : a.mean);
    }
};

/* any/all: out0 bool */
template <class T, bool IS_ANY> struct AnyAll {
    typedef T In;
    typedef bool Acc;
    TL_HD Acc identity() const { return !IS_ANY; }
    TL_HD Acc combine(Acc a, Acc b) const { return IS_ANY ? (a || b) : (a && b); }
    TL_HD Acc step(Acc a, T x, i64) const { return combine(a, load(x) != 0); }
    TL_HD void store(Acc a, i64, const Params&, void* out0, i64 o0, void*, i64) const {
        ((bool*)out0)[o0] = a;
    }
};
template <class T> struct Any : AnyAll<T, true> {};
template <class T> struct All : AnyAll<T, false> {};

}  // namespace red


}  // namespace tl
#endif
