/* Reference kernels of the 'sequence' family: sequence ops (SequenceEmpty,
 * SequenceConstruct, SequenceInsert, SequenceErase, SequenceAt,
 * SequenceLength, SplitToSequence, ConcatFromSequence, SequenceMap) and
 * optional ops (Optional, OptionalHasElement, OptionalGetElement). Items are
 * copied: a sequence value owns its tensors. */
#ifndef POPRT_REF_SEQUENCE_H
#define POPRT_REF_SEQUENCE_H
#include "kernels/kernel.h"

poprt_status poprt__ref_sequence_empty(poprt__kctx *k);
poprt_status poprt__ref_sequence_construct(poprt__kctx *k);
poprt_status poprt__ref_sequence_insert(poprt__kctx *k);
poprt_status poprt__ref_sequence_erase(poprt__kctx *k);
poprt_status poprt__ref_sequence_at(poprt__kctx *k);
poprt_status poprt__ref_sequence_length(poprt__kctx *k);
poprt_status poprt__ref_split_to_sequence(poprt__kctx *k);
poprt_status poprt__ref_concat_from_sequence(poprt__kctx *k);
poprt_status poprt__ref_sequence_map(poprt__kctx *k);
poprt_status poprt__ref_optional(poprt__kctx *k);
poprt_status poprt__ref_optional_has_element(poprt__kctx *k);
poprt_status poprt__ref_optional_get_element(poprt__kctx *k);

#endif
