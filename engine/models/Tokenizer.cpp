#include "engine/models/Tokenizer.h"

#include "engine/core/Text.h"
#include "engine/io/JsonReader.h"
#include "engine/io/Npy.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>

#if FLOWSCOPE_HAVE_SENTENCEPIECE
#include <sentencepiece_processor.h>
#endif

namespace flowscope::models {

namespace {

std::string utf8(char32_t c) {
    std::string s;
    if (c < 0x80) {
        s += char(c);
    } else if (c < 0x800) {
        s += char(0xC0 | (c >> 6));
        s += char(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        s += char(0xE0 | (c >> 12));
        s += char(0x80 | ((c >> 6) & 0x3F));
        s += char(0x80 | (c & 0x3F));
    } else {
        s += char(0xF0 | (c >> 18));
        s += char(0x80 | ((c >> 12) & 0x3F));
        s += char(0x80 | ((c >> 6) & 0x3F));
        s += char(0x80 | (c & 0x3F));
    }
    return s;
}

// The code point at text[i] and its length in bytes; a byte that starts no valid UTF-8 sequence is one
// character of its own, U+FFFD (a symbol).
char32_t decode(std::string_view text, std::size_t i, std::size_t& length) {
    const unsigned char b = static_cast<unsigned char>(text[i]);
    length = 1;
    if (b < 0x80) return b;
    const int extra = (b >> 5) == 6 ? 1 : (b >> 4) == 14 ? 2 : (b >> 3) == 30 ? 3 : -1;
    if (extra < 0 || i + std::size_t(extra) >= text.size()) return 0xFFFD;
    char32_t c = b & (0x3F >> extra);
    for (int k = 1; k <= extra; ++k) {
        const unsigned char t = static_cast<unsigned char>(text[i + std::size_t(k)]);
        if ((t >> 6) != 2) return 0xFFFD;
        c = (c << 6) | (t & 0x3F);
    }
    length = std::size_t(extra) + 1;
    return c;
}

struct Range {
    char32_t first, last;
};
bool inRanges(char32_t c, std::initializer_list<Range> ranges) {
    for (const Range& r : ranges)
        if (c >= r.first && c <= r.last) return true;
    return false;
}

// Unicode's White_Space (the \s of the pattern).
bool isSpace(char32_t c) {
    return inRanges(c, {{9, 13},
                        {32, 32},
                        {0x85, 0x85},
                        {0xA0, 0xA0},
                        {0x1680, 0x1680},
                        {0x2000, 0x200A},
                        {0x2028, 0x2029},
                        {0x202F, 0x202F},
                        {0x205F, 0x205F},
                        {0x3000, 0x3000}});
}
// \p{N}: the ASCII digits and the common other digits and numerals (a table, not all of Unicode's).
bool isNumber(char32_t c) {
    return inRanges(c, {{'0', '9'},
                        {0xB2, 0xB3},
                        {0xB9, 0xB9},
                        {0xBC, 0xBE},
                        {0x660, 0x669},
                        {0x6F0, 0x6F9},
                        {0x966, 0x96F},
                        {0x2070, 0x2070},
                        {0x2074, 0x2079},
                        {0x2080, 0x2089},
                        {0x2150, 0x2189},
                        {0x2460, 0x249B},
                        {0x2776, 0x2793},
                        {0xFF10, 0xFF19}});
}
// \p{L}: the ASCII letters, and every other character outside the punctuation, symbol, space and number
// blocks of this table (exact for ASCII and for the letters of the alphabetic scripts).
bool isLetter(char32_t c) {
    if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (isSpace(c) || isNumber(c)) return false;
    if (c == 0xAA || c == 0xB5 || c == 0xBA) return true;
    return !inRanges(c, {{0x80, 0xBF},
                         {0xD7, 0xD7},
                         {0xF7, 0xF7},
                         {0x2000, 0x2BFF},
                         {0x2E00, 0x2E7F},
                         {0x3000, 0x303F},
                         {0xFE10, 0xFE1F},
                         {0xFE30, 0xFE6F},
                         {0xFF00, 0xFF20},
                         {0xFF3B, 0xFF40},
                         {0xFF5B, 0xFF65},
                         {0xFFF0, 0xFFFF},
                         {0x1F000, 0x1FAFF}});
}

enum class Kind { Letter, Number, Space, Other };
Kind kindOf(char32_t c) {
    return isLetter(c) ? Kind::Letter : isNumber(c) ? Kind::Number : isSpace(c) ? Kind::Space : Kind::Other;
}

} // namespace

const std::array<std::string, 256>& BpeTokenizer::bytesToUnicode() {
    static const std::array<std::string, 256> table = [] {
        std::array<std::string, 256> t;
        auto prints = [](int b) {
            return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        };
        int next = 0;
        for (int b = 0; b < 256; ++b)
            t[std::size_t(b)] = utf8(prints(b) ? char32_t(b) : char32_t(256 + next++));
        return t;
    }();
    return table;
}

std::vector<std::string> BpeTokenizer::preTokenize(std::string_view text) {
    // The characters of the text with their kinds and byte offsets.
    struct Char {
        std::size_t at;
        Kind kind;
    };
    std::vector<Char> chars;
    for (std::size_t i = 0, len = 0; i < text.size(); i += len)
        chars.push_back({i, kindOf(decode(text, i, len))});
    const std::size_t n = chars.size();
    auto offset = [&](std::size_t k) { return k < n ? chars[k].at : text.size(); };
    auto runOf = [&](std::size_t k, auto&& in) {
        while (k < n && in(chars[k].kind)) ++k;
        return k;
    };
    std::vector<std::string> pieces;
    for (std::size_t k = 0; k < n;) {
        std::size_t end = k;
        // 's 't 're 've 'm 'll 'd
        if (text[offset(k)] == '\'') {
            for (std::string_view c : {"s", "t", "re", "ve", "m", "ll", "d"})
                if (text.substr(offset(k) + 1, c.size()) == c) {
                    end = k + 1 + c.size();
                    break;
                }
        }
        // ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+': an optional space and a run of one kind.
        if (end == k) {
            const std::size_t s =
                text[offset(k)] == ' ' && k + 1 < n && chars[k + 1].kind != Kind::Space ? k + 1 : k;
            const Kind kind = chars[s].kind;
            if (kind != Kind::Space) end = runOf(s, [&](Kind x) { return x == kind; });
        }
        // '\s+(?!\S)' then '\s+': a run of spaces leaves its last one to the piece after it (if any follows).
        if (end == k) {
            end = runOf(k, [](Kind x) { return x == Kind::Space; });
            if (end < n && end - k > 1) --end;
        }
        pieces.emplace_back(text.substr(offset(k), offset(end) - offset(k)));
        k = end;
    }
    return pieces;
}

BpeTokenizer::BpeTokenizer(const std::string& vocabJson, const std::string& mergesTxt) {
    try {
        const JsonReader::Json json = parseJson(readModelFile(vocabJson), 4);
        const JsonReader r(json);
        r.expectObject();
        for (auto it = json.begin(); it != json.end(); ++it)
            vocab_[it.key()] = int(r.require(it.key()).integer(0, std::numeric_limits<int>::max()));
        for (const auto& [symbol, id] : vocab_) symbols_.emplace(id, symbol);
    } catch (const JsonError& e) {
        throw ModelError(vocabJson + ": " + e.what());
    }
    std::istringstream merges(readModelFile(mergesTxt));
    int line = 0;
    for (std::string text; std::getline(merges, text);) {
        ++line;
        if (!text.empty() && text.back() == '\r') text.pop_back();
        if (text.empty() || (line == 1 && text.rfind("#version", 0) == 0)) continue;
        const std::size_t space = text.find(' ');
        if (space == std::string::npos || space == 0 || space + 1 == text.size() ||
            text.find(' ', space + 1) != std::string::npos)
            throw ModelError(mergesTxt + ": line " + std::to_string(line) + ": expected two symbols, got " +
                             quoteForMessage(text));
        ranks_.emplace(text, int(ranks_.size())); // the first of a repeated merge keeps its rank
    }
}

std::string BpeTokenizer::text(int id) const {
    const auto it = symbols_.find(id);
    if (it == symbols_.end()) return "#" + std::to_string(id);
    static const std::unordered_map<std::string, char> byteOf = [] {
        std::unordered_map<std::string, char> m;
        for (int b = 0; b < 256; ++b) m.emplace(bytesToUnicode()[std::size_t(b)], char(b));
        return m;
    }();
    std::string out;
    const std::string& s = it->second;
    for (std::size_t i = 0; i < s.size();) {
        std::size_t len = 1; // one UTF-8 character
        const auto lead = static_cast<unsigned char>(s[i]);
        if (lead >= 0xf0)
            len = 4;
        else if (lead >= 0xe0)
            len = 3;
        else if (lead >= 0xc0)
            len = 2;
        const auto b = byteOf.find(s.substr(i, len));
        out += b != byteOf.end() ? std::string(1, b->second) : s.substr(i, len);
        i += len;
    }
    return out;
}

std::vector<std::string> BpeTokenizer::merge(std::string_view piece) const {
    std::vector<std::string> symbols;
    for (unsigned char b : piece) symbols.push_back(bytesToUnicode()[b]);
    while (symbols.size() > 1) {
        int best = std::numeric_limits<int>::max();
        std::string pair;
        for (std::size_t i = 0; i + 1 < symbols.size(); ++i)
            if (auto it = ranks_.find(symbols[i] + " " + symbols[i + 1]);
                it != ranks_.end() && it->second < best) {
                best = it->second;
                pair = it->first;
            }
        if (pair.empty()) break;
        const std::string left = pair.substr(0, pair.find(' ')), right = pair.substr(pair.find(' ') + 1);
        std::vector<std::string> merged;
        for (std::size_t i = 0; i < symbols.size(); ++i) {
            if (i + 1 < symbols.size() && symbols[i] == left && symbols[i + 1] == right) {
                merged.push_back(left + right);
                ++i;
            } else {
                merged.push_back(symbols[i]);
            }
        }
        symbols = std::move(merged);
    }
    return symbols;
}

std::vector<int> BpeTokenizer::encode(std::string_view text) const {
    std::vector<int> ids;
    for (const std::string& piece : preTokenize(text))
        for (const std::string& symbol : merge(piece)) {
            const auto it = vocab_.find(symbol);
            if (it == vocab_.end())
                throw ModelError("the BPE symbol " + quoteForMessage(symbol) + " is not in vocab.json");
            ids.push_back(it->second);
        }
    return ids;
}

bool haveSentencePiece() {
#if FLOWSCOPE_HAVE_SENTENCEPIECE
    return true;
#else
    return false;
#endif
}

#if FLOWSCOPE_HAVE_SENTENCEPIECE
namespace {
std::unique_ptr<sentencepiece::SentencePieceProcessor> loadSentencePiece(const std::string& modelPath) {
    if (const std::string why = notARegularFile(modelPath); !why.empty())
        throw ModelError(modelPath + ": " + why);
    auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
    if (const auto status = sp->Load(modelPath); !status.ok())
        throw ModelError(modelPath + ": not a SentencePiece model (" + status.ToString() + ")");
    return sp;
}
} // namespace
#endif

std::vector<int> encodeSentencePiece(const std::string& modelPath, const std::string& text) {
#if FLOWSCOPE_HAVE_SENTENCEPIECE
    const auto sp = loadSentencePiece(modelPath);
    std::vector<int> ids;
    if (const auto status = sp->Encode(text, &ids); !status.ok())
        throw ModelError(modelPath + ": " + status.ToString());
    return ids;
#else
    (void)text;
    throw ModelError(modelPath + ": this build has no SentencePiece (install libsentencepiece-dev and "
                                 "reconfigure), give the token ids with --ids");
#endif
}

std::vector<int> tokenize(const std::string& dir, const ModelConfig& config, const std::string& text) {
    namespace fs = std::filesystem;
    if (config.family == Family::Gpt2)
        return BpeTokenizer((fs::path(dir) / "vocab.json").string(), (fs::path(dir) / "merges.txt").string())
            .encode(text);
    if (config.family == Family::Bert)
        throw ModelError("BERT's WordPiece tokenizer is not read: give the token ids with --ids");
    const std::string model = (fs::path(dir) / "spiece.model").string();
    std::string lower = text;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](char c) { return char(std::tolower(static_cast<unsigned char>(c))); });
    std::vector<int> ids = encodeSentencePiece(model, lower);
#if FLOWSCOPE_HAVE_SENTENCEPIECE
    const auto sp = loadSentencePiece(model);
    const int cls = sp->PieceToId("[CLS]"), sep = sp->PieceToId("[SEP]");
    if (cls != sp->unk_id() && sep != sp->unk_id()) {
        ids.insert(ids.begin(), cls);
        ids.push_back(sep);
    }
#endif
    return ids;
}

std::vector<std::string> tokenTexts(const std::string& dir, const ModelConfig& config,
                                    const std::vector<int>& ids) {
    namespace fs = std::filesystem;
    std::vector<std::string> texts;
    for (int id : ids) texts.push_back("#" + std::to_string(id));
    try {
        if (config.family == Family::Gpt2) {
            const BpeTokenizer bpe((fs::path(dir) / "vocab.json").string(),
                                   (fs::path(dir) / "merges.txt").string());
            for (std::size_t i = 0; i < ids.size(); ++i) texts[i] = bpe.text(ids[i]);
        }
#if FLOWSCOPE_HAVE_SENTENCEPIECE
        if (config.family == Family::Albert && fs::exists(fs::path(dir) / "spiece.model")) {
            const auto sp = loadSentencePiece((fs::path(dir) / "spiece.model").string());
            for (std::size_t i = 0; i < ids.size(); ++i)
                if (ids[i] >= 0 && ids[i] < sp->GetPieceSize()) texts[i] = sp->IdToPiece(ids[i]);
        }
#endif
    } catch (const ModelError&) {
        // no tokenizer: the ids stand
    }
    return texts;
}

} // namespace flowscope::models
