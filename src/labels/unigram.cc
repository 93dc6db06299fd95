#include "labels/unigram.h"

#include <algorithm>
#include <cstdio>
#include <limits>

namespace docfeed::internal {
namespace {

constexpr double kUnknownPenalty = 10.0;  // K_UNK_PENALTY

size_t CodePointLength(std::string_view s, size_t at) {
  auto lead = static_cast<uint8_t>(s[at]);
  size_t n = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
  return std::min(n, s.size() - at);
}

// The best path ending at a byte position.
struct PathNode {
  int64_t id = -1;
  double score = 0;
  std::optional<size_t> start;
};

}  // namespace

Result<UnigramModel> UnigramModel::Create(std::vector<std::pair<std::string, double>> pieces,
                                          std::optional<int64_t> unk_id, bool byte_fallback) {
  if (pieces.empty()) return InvalidArgumentError("Unigram: empty vocabulary");
  if (unk_id && (*unk_id < 0 || static_cast<size_t>(*unk_id) >= pieces.size())) {
    return InvalidArgumentError("Unigram: unk_id " + std::to_string(*unk_id) +
                                " is not in the vocabulary of " + std::to_string(pieces.size()));
  }
  UnigramModel m;
  m.pieces_ = std::move(pieces);
  m.unk_id_ = unk_id;
  m.byte_fallback_ = byte_fallback;
  m.min_score_ = std::numeric_limits<double>::infinity();
  m.node_piece_.push_back(-1);
  for (size_t id = 0; id < m.pieces_.size(); ++id) {
    const auto& [piece, score] = m.pieces_[id];
    m.ids_[piece] = static_cast<int64_t>(id);
    m.min_score_ = std::min(m.min_score_, score);
    uint32_t node = 0;
    for (char c : piece) {
      uint64_t key = (uint64_t{node} << 8) | static_cast<uint8_t>(c);
      auto [it, inserted] = m.trie_.try_emplace(key, static_cast<uint32_t>(m.node_piece_.size()));
      if (inserted) m.node_piece_.push_back(-1);
      node = it->second;
    }
    if (!piece.empty()) m.node_piece_[node] = static_cast<int64_t>(id);
  }
  // Leaves reached through a repeated piece carry its last id, as the id map does.
  for (int64_t& id : m.node_piece_) {
    if (id >= 0) id = m.ids_.at(m.pieces_[static_cast<size_t>(id)].first);
  }
  return m;
}

void UnigramModel::PrefixMatches(std::string_view text, size_t begin,
                                 std::vector<std::pair<size_t, int64_t>>* out) const {
  out->clear();
  uint32_t node = 0;
  for (size_t i = begin; i < text.size(); ++i) {
    auto it = trie_.find((uint64_t{node} << 8) | static_cast<uint8_t>(text[i]));
    if (it == trie_.end()) return;
    node = it->second;
    if (node_piece_[node] >= 0) out->emplace_back(i + 1, node_piece_[node]);
  }
}

Status UnigramModel::Encode(std::string_view piece, std::vector<int64_t>* ids) const {
  if (piece.empty()) return Status::Ok();
  const double unk_score = min_score_ - kUnknownPenalty;
  std::vector<PathNode> best(piece.size() + 1);
  std::vector<std::pair<size_t, int64_t>> matches;
  for (size_t start = 0; start < piece.size();) {
    const double here = best[start].score;
    const size_t char_bytes = CodePointLength(piece, start);
    bool has_single = false;
    auto offer = [&](size_t end, int64_t id, double score) {
      PathNode& node = best[end];
      if (!node.start || here + score > node.score) node = {id, here + score, start};
    };
    PrefixMatches(piece, start, &matches);
    for (const auto& [end, id] : matches) {
      offer(end, id, pieces_[static_cast<size_t>(id)].second);
      if (end - start == char_bytes) has_single = true;
    }
    if (!has_single) {
      if (!unk_id_) return InvalidArgumentError("Unigram: no piece for a character and no unk_id");
      offer(start + char_bytes, *unk_id_, unk_score);
    }
    start += char_bytes;
  }
  // Back from the end; consecutive unknowns become one token (fuse_unk).
  std::vector<std::string_view> tokens;
  size_t fused_start = std::string_view::npos;
  for (size_t end = piece.size(); end > 0;) {
    const PathNode& node = best[end];
    size_t start = *node.start;
    if (node.id == unk_id_) {
      if (fused_start == std::string_view::npos) fused_start = end;
    } else {
      if (fused_start != std::string_view::npos) {
        tokens.push_back(piece.substr(end, fused_start - end));
        fused_start = std::string_view::npos;
      }
      tokens.push_back(piece.substr(start, end - start));
    }
    end = start;
  }
  if (fused_start != std::string_view::npos) tokens.push_back(piece.substr(0, fused_start));
  for (auto it = tokens.rbegin(); it != tokens.rend(); ++it) AppendTokenIds(*it, ids);
  return Status::Ok();
}

void UnigramModel::AppendTokenIds(std::string_view token, std::vector<int64_t>* ids) const {
  if (std::optional<int64_t> id = PieceToId(token)) {
    ids->push_back(*id);
    return;
  }
  if (byte_fallback_) {
    std::vector<int64_t> bytes;
    for (char c : token) {
      char name[8];
      std::snprintf(name, sizeof(name), "<0x%02X>", static_cast<uint8_t>(c));
      std::optional<int64_t> id = PieceToId(name);
      if (!id) break;
      bytes.push_back(*id);
    }
    if (bytes.size() == token.size()) {
      ids->insert(ids->end(), bytes.begin(), bytes.end());
      return;
    }
  }
  ids->push_back(*unk_id_);  // Encode only yields unknown tokens when unk_id is set
}

std::optional<int64_t> UnigramModel::PieceToId(std::string_view piece) const {
  auto it = ids_.find(std::string(piece));
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

}  // namespace docfeed::internal
