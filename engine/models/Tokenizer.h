// Flowscope engine: the tokenizers of the checkpoints of engine/models: GPT-2's byte-level BPE (vocab.json
// and merges.txt) and ALBERT's SentencePiece (spiece.model, through libsentencepiece where the build has it).
// docs/models.md says what each does and where it departs from Hugging Face's.
#pragma once

#include "engine/models/Model.h"

#include <array>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace flowscope::models {

// GPT-2's byte-level BPE: the text is cut by GPT-2's pre-tokenizer (preTokenize), each piece's bytes become
// the printable characters of bytesToUnicode, and the merges are applied lowest rank first.
class BpeTokenizer {
  public:
    // Throws ModelError naming the file (and line) at fault.
    BpeTokenizer(const std::string& vocabJson, const std::string& mergesTxt);
    // Throws ModelError when a piece's symbol is not in the vocabulary.
    std::vector<int> encode(std::string_view text) const;
    // The text of token `id`: its symbol's bytes (bytesToUnicode undone); "#id" for an id not in the
    // vocabulary.
    std::string text(int id) const;
    // The symbols of one piece after the merges (for the tests).
    std::vector<std::string> merge(std::string_view piece) const;

    // GPT-2's pattern 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+, written out
    // by hand (std::regex has no \p{..} and no look-ahead past a class): the text's pieces, in order, which
    // concatenate to the text.
    static std::vector<std::string> preTokenize(std::string_view text);
    // GPT-2's map of the 256 bytes to printable characters (UTF-8): bytes that print stay themselves, the
    // others go to U+0100 upwards in order.
    static const std::array<std::string, 256>& bytesToUnicode();

  private:
    std::unordered_map<std::string, int> vocab_;
    std::unordered_map<std::string, int> ranks_;   // "left right" -> rank (line order of merges.txt)
    std::unordered_map<int, std::string> symbols_; // id -> symbol (vocab_ inverted)
};

// Whether this build can read spiece.model (libsentencepiece was found when it was configured).
bool haveSentencePiece();
// The ids SentencePiece gives `text` with the model `modelPath` (no special tokens). Throws ModelError when
// the model cannot be loaded, or when the build has no SentencePiece.
std::vector<int> encodeSentencePiece(const std::string& modelPath, const std::string& text);

// The token ids of `text` with the tokenizer in the checkpoint folder: GPT-2 vocab.json + merges.txt (no
// special tokens, as Hugging Face's); ALBERT spiece.model, the text lower-cased (ASCII) as ALBERT's tokenizer
// does, between [CLS] and [SEP]. BERT's WordPiece is not read: give its ids. Throws ModelError.
std::vector<int> tokenize(const std::string& dir, const ModelConfig& config, const std::string& text);

// What each token of `ids` reads as, for a picture's labels: GPT-2's bytes (vocab.json), ALBERT's
// SentencePiece piece; "#id" where the folder has no tokenizer this build reads. Never throws for a missing
// or bad tokenizer file (the ids stand alone).
std::vector<std::string> tokenTexts(const std::string& dir, const ModelConfig& config,
                                    const std::vector<int>& ids);

} // namespace flowscope::models
