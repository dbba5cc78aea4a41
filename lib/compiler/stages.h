/* Pipeline stages (stages.c): a model annotated by manual_sharding (node
 * metadata "poprt.pipeline_stage") split into one model per stage, each
 * compiled into its own program and run on its own core group by the
 * runtime's pipeline (lib/runtime/pipeline.c, docs/sharding.md). */
#ifndef POPRT_STAGES_H
#define POPRT_STAGES_H

#include "compiler/program.h"

typedef struct poprt__stages {
    int n;
    poprt__model **models; /* per stage, in order; owned */
} poprt__stages;

/* The model's "poprt.num_pipeline_stages" metadata (0 when absent or not a
 * number). */
int64_t poprt__model_num_stages(const poprt__model *m);

/* Splits m by its nodes' "poprt.pipeline_stage" (stage numbers without a
 * node are skipped). The options' input_shape.<name> are applied and the
 * shapes inferred (constants folded by `folder`) before the split, so each
 * stage model has static input types. A tensor made in stage j and read in
 * stage k > j is an output of stage j's model and an input of stage k's
 * (of every later stage reading it); graph inputs go to each stage reading
 * them; graph outputs stay with the stage making them (those made by no
 * node: stage 0); initializers go to each stage reading them. Errors: a
 * node without a stage or a node reading a tensor of a later stage
 * (INVALID_MODEL naming both nodes and the tensor); a tensor crossing
 * stages without a static shape (SHAPE_MISMATCH naming it). */
poprt_status poprt__stages_split(const poprt__model *m, const poprt_options *o,
                                 const poprt__folder *folder, poprt__stages *out);
void poprt__stages_free(poprt__stages *s);

#endif
