/* Reference kernels of the 'random' group. */
#ifndef POPRT_REF_RANDOM_H
#define POPRT_REF_RANDOM_H
#include "kernels/kernel.h"

poprt_status poprt__ref_random_normal(poprt__kctx *k); /* also RandomNormalLike */
poprt_status poprt__ref_random_uniform(poprt__kctx *k); /* also RandomUniformLike */
poprt_status poprt__ref_bernoulli(poprt__kctx *k);
poprt_status poprt__ref_multinomial(poprt__kctx *k);

#endif
