// The loader's internal view: the public types of docfeed/loader.h under docfeed::internal, and
// its parts (buffer_pool.h, scheduler.h, sample_reader.h, loader_stats.h; README.md).
#ifndef DOCFEED_PIPELINE_LOADER_H_
#define DOCFEED_PIPELINE_LOADER_H_

#include "docfeed/loader.h"
#include "imaging/donut.h"
#include "imaging/normalize.h"
#include "pipeline/epoch_order.h"
#include "preset/preset.h"

namespace docfeed::internal {

using docfeed::BadSamplePolicy;
using docfeed::Batch;
using docfeed::BufferAllocator;
using docfeed::Loader;
using docfeed::LoaderOptions;
using docfeed::LoaderState;
using docfeed::LoaderStats;
using docfeed::LoaderStatsJson;
using docfeed::StageTime;

}  // namespace docfeed::internal

#endif  // DOCFEED_PIPELINE_LOADER_H_
