#include "labels/bpe.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <queue>
#include <tuple>

namespace docfeed::internal {
namespace {

uint64_t PairKey(int64_t left, int64_t right) {
  return (static_cast<uint64_t>(left) << 32) | static_cast<uint32_t>(right);
}

size_t CharLength(uint8_t lead) { return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4; }

// A queued merge: lowest rank first, then lowest position (Merge's Ord in word.rs).
struct Candidate {
  uint32_t rank;
  size_t pos;
  int64_t new_id;
  bool operator>(const Candidate& o) const { return std::tie(rank, pos) > std::tie(o.rank, o.pos); }
};

}  // namespace

Result<BpeModel> BpeModel::Create(std::unordered_map<std::string, int64_t> vocab,
                                  const std::vector<std::pair<std::string, std::string>>& merges,
                                  BpeOptions options) {
  BpeModel m;
  m.vocab_ = std::move(vocab);
  m.options_ = std::move(options);
  if (m.options_.unk_token) {
    auto it = m.vocab_.find(*m.options_.unk_token);
    // tokenizers fails at the first unknown character (UnkTokenOutOfVocabulary); refuse early.
    if (it == m.vocab_.end()) {
      return InvalidArgumentError("BPE unk_token '" + *m.options_.unk_token +
                                  "' is not in the vocabulary");
    }
    m.unk_id_ = it->second;
  }
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [a, b] = merges[rank];
    for (const std::string& t : {a, b, a + b}) {
      if (m.vocab_.count(t) == 0) {
        return InvalidArgumentError("BPE merge " + std::to_string(rank) + " (" + a + " " + b +
                                    "): '" + t + "' is not in the vocabulary");
      }
    }
    // A repeated pair keeps its last rank, as collecting the merges into a map does.
    m.merges_[PairKey(m.vocab_[a], m.vocab_[b])] = {static_cast<uint32_t>(rank), m.vocab_[a + b]};
  }
  return m;
}

std::vector<int64_t> BpeModel::InitialSymbols(std::string_view piece) const {
  std::vector<int64_t> symbols;
  bool pending_unk = false;
  auto flush_unk = [&] {
    if (pending_unk) symbols.push_back(*unk_id_);
    pending_unk = false;
  };
  for (size_t i = 0; i < piece.size();) {
    size_t n = std::min(CharLength(static_cast<uint8_t>(piece[i])), piece.size() - i);
    std::string_view c = piece.substr(i, n);
    i += n;
    if (std::optional<int64_t> id = PieceToId(c)) {
      flush_unk();
      symbols.push_back(*id);
      continue;
    }
    if (options_.byte_fallback) {
      std::vector<int64_t> bytes;
      for (char b : c) {
        char name[8];
        std::snprintf(name, sizeof(name), "<0x%02X>", static_cast<uint8_t>(b));
        if (std::optional<int64_t> id = PieceToId(name)) bytes.push_back(*id);
      }
      if (bytes.size() == c.size()) {
        // Bytes do not flush a pending unknown: merge_word adds it only before a vocabulary
        // character or at the end.
        symbols.insert(symbols.end(), bytes.begin(), bytes.end());
        continue;
      }
    }
    if (!unk_id_) continue;  // no unk token: the character is dropped
    if (!options_.fuse_unk) flush_unk();
    pending_unk = true;
  }
  flush_unk();
  return symbols;
}

Status BpeModel::Encode(std::string_view piece, std::vector<int64_t>* ids) const {
  if (piece.empty()) return Status::Ok();
  if (options_.ignore_merges) {
    if (std::optional<int64_t> id = PieceToId(piece)) {
      ids->push_back(*id);
      return Status::Ok();
    }
  }
  std::vector<int64_t> symbol = InitialSymbols(piece);
  // Doubly linked symbols; a merged-away symbol is marked dead.
  const size_t n = symbol.size();
  std::vector<ptrdiff_t> prev(n);
  std::vector<ptrdiff_t> next(n);
  std::vector<bool> alive(n, true);
  for (size_t i = 0; i < n; ++i) {
    prev[i] = static_cast<ptrdiff_t>(i) - 1;
    next[i] = i + 1 < n ? static_cast<ptrdiff_t>(i + 1) : -1;
  }
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto offer = [&](size_t pos) {
    if (next[pos] < 0) return;
    auto it = merges_.find(PairKey(symbol[pos], symbol[static_cast<size_t>(next[pos])]));
    if (it != merges_.end()) queue.push({it->second.first, pos, it->second.second});
  };
  for (size_t i = 0; i + 1 < n; ++i) offer(i);
  while (!queue.empty()) {
    Candidate top = queue.top();
    queue.pop();
    if (!alive[top.pos] || next[top.pos] < 0) continue;
    auto right = static_cast<size_t>(next[top.pos]);
    // A stale entry: the pair at pos changed since it was queued.
    auto it = merges_.find(PairKey(symbol[top.pos], symbol[right]));
    if (it == merges_.end() || it->second.second != top.new_id) continue;
    symbol[top.pos] = top.new_id;
    alive[right] = false;
    next[top.pos] = next[right];
    if (next[right] >= 0) prev[static_cast<size_t>(next[right])] = static_cast<ptrdiff_t>(top.pos);
    if (prev[top.pos] >= 0) offer(static_cast<size_t>(prev[top.pos]));
    offer(top.pos);
  }
  for (size_t i = 0; i < n; ++i) {
    if (alive[i]) ids->push_back(symbol[i]);
  }
  return Status::Ok();
}

std::optional<int64_t> BpeModel::PieceToId(std::string_view piece) const {
  auto it = vocab_.find(std::string(piece));
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

}  // namespace docfeed::internal
