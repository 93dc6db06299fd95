#include "pack/labeler.h"

#include <utility>

#include "base/file.h"

namespace docfeed::internal {
namespace {

std::string FieldContext(const std::string& field) { return "field '" + field + "'"; }

}  // namespace

Labeler::Labeler(const LabelOptions& options, std::unique_ptr<LabelTokenizer> tokenizer,
                 size_t target_column)
    : options_(options), tokenizer_(std::move(tokenizer)), target_column_(target_column) {}

Result<std::unique_ptr<Labeler>> Labeler::Create(const LabelOptions& options,
                                                 const ImageFolder& folder) {
  if (options.max_length < 1) return InvalidArgumentError("--max-length must be at least 1");
  size_t column = folder.columns.size();
  for (size_t c = 0; c < folder.columns.size(); ++c) {
    const ColumnSpec& spec = folder.columns[c];
    if (spec.name == kLabelsColumn || spec.name == kTargetSequenceColumn) {
      return InvalidArgumentError(folder.root + "/metadata.jsonl already has a '" + spec.name +
                                  "' column; --tokenizer writes it");
    }
    if (spec.name == options.target_field) column = c;
  }
  if (column == folder.columns.size()) {
    return InvalidArgumentError(folder.root + "/metadata.jsonl has no column '" +
                                options.target_field + "' (--target-field)");
  }
  if (folder.columns[column].type != ColumnType::kString) {
    return InvalidArgumentError("column '" + options.target_field +
                                "' must hold JSON text (strings), not " +
                                std::string(ColumnTypeName(folder.columns[column].type)));
  }
  DOCFEED_ASSIGN_OR_RETURN(LoadedTokenizer loaded,
                           LoadLabelTokenizer(options.tokenizer_dir, options.env));
  std::unique_ptr<Labeler> l(new Labeler(options, std::move(loaded.tokenizer), column));
  l->tokenizer_warning_ = std::move(loaded.warning);
  l->targets_ = std::make_unique<TargetBuilder>(options.target, l->tokenizer_->SpecialTokens());
  // Pass 1. A sample that fails here fails identically in Make(), which reports it.
  for (size_t i = 0; i < folder.samples.size(); ++i) {
    if (const auto* gt = std::get_if<std::string>(&folder.samples[i].values[column])) {
      l->targets_->Collect(*gt, i).status().IgnoreError();
    }
  }
  l->targets_->FinishCollecting();
  l->new_tokens_ =
      static_cast<size_t>(l->tokenizer_->AddSpecialTokens(l->targets_->tokens_to_add()));
  l->shape_.max_length = options.max_length;
  l->shape_.pad_to_max_length = options.pad_to_max_length;
  l->shape_.pad_id = l->tokenizer_->pad_id();
  if (!options.target.prompt_end_token.empty()) {
    l->shape_.prompt_end_id = l->tokenizer_->TokenToId(options.target.prompt_end_token);
  }
  return l;
}

Result<std::vector<Value>> Labeler::Make(size_t i, const SourceSample& sample) const {
  const std::string& field = options_.target_field;
  const auto* gt = std::get_if<std::string>(&sample.values[target_column_]);
  if (gt == nullptr) {
    return InvalidArgumentError(FieldContext(field) + ": missing (no ground truth)");
  }
  Result<std::vector<std::string>> targets = targets_->Build(*gt, i);
  if (!targets.ok()) return targets.status().WithContext(FieldContext(field));
  // With several `gt_parses` the recipe draws one per epoch; the shard stores the first.
  std::string& target = targets->front();
  Result<std::vector<int64_t>> ids = tokenizer_->Encode(target);
  if (!ids.ok()) return ids.status().WithContext(FieldContext(field));
  LabelIds labels = MakeLabels(std::move(ids).value(), shape_);
  if (labels.truncated) {
    if (options_.strict) {
      return InvalidArgumentError(
          FieldContext(field) + ": target has " + std::to_string(labels.token_count) +
          " tokens, more than --max-length " + std::to_string(options_.max_length) + " (--strict)");
    }
    truncated_.fetch_add(1);
  }
  return std::vector<Value>{std::move(labels.labels), std::move(target)};
}

std::vector<ColumnSpec> Labeler::Columns() {
  return {{kLabelsColumn, ColumnType::kInt64List}, {kTargetSequenceColumn, ColumnType::kString}};
}

std::vector<std::string> Labeler::TokenizerFileNames() const {
  std::vector<std::string> names;
  for (const std::string& f : tokenizer_->FileNames()) {
    names.push_back(JoinPath(kTokenizerDirName, f));
  }
  return names;
}

Result<std::vector<std::string>> Labeler::SaveTokenizer(const std::string& dir) const {
  std::string out = JoinPath(dir, kTokenizerDirName);
  Env* env = EnvOrDefault(options_.env);
  DOCFEED_RETURN_IF_ERROR(env->CreateDirectory(out));
  DOCFEED_RETURN_IF_ERROR(tokenizer_->Save(out, options_.max_length, env));
  return TokenizerFileNames();
}

}  // namespace docfeed::internal
