/* Compiles the body file named by TL_LEVEL_BODY (a quoted file name) once per ISA level:
 * TL_LEVEL 0 (portable C), then, on x86-64, 3 (AVX2+FMA) and 4 (AVX-512) inside the matching
 * target pragmas, with TL_SFX(name) naming each copy name_base, name_v3, name_v4.  The
 * includer then installs one copy at run time (its *_install function).  No include guard:
 * each kernel header includes this once with its own body.
 *
 *     #define TL_LEVEL_BODY "conv_winograd_body.h"
 *     #include "isa_levels.h"
 *     #undef TL_LEVEL_BODY                                                                  */
#include "isa.h"

#define TL_LEVEL 0
#define TL_SFX(name) name##_base
#include TL_LEVEL_BODY
#undef TL_SFX
#undef TL_LEVEL

#if TL_X86_MULTIVERSION
TL_BEGIN_TARGET_V3
#define TL_LEVEL 3
#define TL_SFX(name) name##_v3
#include TL_LEVEL_BODY
#undef TL_SFX
#undef TL_LEVEL
TL_END_TARGET
TL_BEGIN_TARGET_V4
#define TL_LEVEL 4
#define TL_SFX(name) name##_v4
#include TL_LEVEL_BODY
#undef TL_SFX
#undef TL_LEVEL
TL_END_TARGET
#endif
