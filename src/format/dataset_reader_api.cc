// docfeed::DatasetReader (docfeed/dataset.h): a thin handle over internal::Dataset.
#include <memory>
#include <string>
#include <utility>

#include "codec/codec.h"
#include "docfeed/dataset.h"
#include "format/dataset.h"
#include "format/index.h"

namespace docfeed {

class DatasetReader::Impl {
 public:
  explicit Impl(std::unique_ptr<internal::Dataset> dataset) : dataset_(std::move(dataset)) {}
  const internal::Dataset& dataset() const { return *dataset_; }

 private:
  const std::unique_ptr<const internal::Dataset> dataset_;
};

namespace {

// The index's codec number as its name; StoredCodecName returns static strings.
std::string_view CodecName(uint8_t codec) {
  return internal::StoredCodecName(static_cast<internal::StoredCodec>(codec));
}

}  // namespace

DatasetReader::DatasetReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DatasetReader::~DatasetReader() = default;

Result<std::unique_ptr<DatasetReader>> DatasetReader::Open(const std::string& path, Env* env) {
  DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<internal::Dataset> dataset,
                           internal::Dataset::Open(path, env));
  return std::unique_ptr<DatasetReader>(
      new DatasetReader(std::make_unique<Impl>(std::move(dataset))));
}

uint64_t DatasetReader::size() const { return impl_->dataset().size(); }

bool DatasetReader::preprocessed() const {
  return impl_->dataset().manifest().preprocess.preprocessed();
}

Result<StoredSample> DatasetReader::Read(uint64_t id) const {
  const internal::Dataset& dataset = impl_->dataset();
  DOCFEED_ASSIGN_OR_RETURN(internal::SampleBytes read, dataset.ReadSample(id, false));
  const internal::IndexRecord record = dataset.record(id);
  StoredSample out;
  out.bytes = read.image;
  out.storage = std::move(read.owned);  // a vector move keeps the block `bytes` may point into
  out.codec = CodecName(record.codec);
  out.width = static_cast<int32_t>(record.width);
  out.height = static_cast<int32_t>(record.height);
  out.channels = record.channels;
  const int orientation = record.flags & 0xF;
  out.orientation = orientation == 0 ? 1 : orientation;
  if (record.codec == static_cast<uint8_t>(internal::StoredCodec::kPpm)) {
    Result<internal::ImageView> view = internal::ViewPpm(out.bytes);
    if (!view.ok())
      return view.status().WithContext(dataset.dir() + ": sample " + std::to_string(id));
    out.pixels = {view->data,
                  static_cast<size_t>(view->stride_bytes) * static_cast<size_t>(view->height)};
  } else if (record.codec == static_cast<uint8_t>(internal::StoredCodec::kPfm)) {
    Result<internal::FloatRowsView> view = internal::ViewPfm(out.bytes);
    if (!view.ok())
      return view.status().WithContext(dataset.dir() + ": sample " + std::to_string(id));
    // The raster from its first stored row (the image's bottom one) to its end.
    const size_t raster_bytes =
        static_cast<size_t>(view->width) * sizeof(float) * static_cast<size_t>(view->height);
    out.pixels = {out.bytes.data() + out.bytes.size() - raster_bytes, raster_bytes};
  }
  return out;
}

}  // namespace docfeed
