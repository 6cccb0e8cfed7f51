// engine/models: checkpoint errors naming the key, GPT-2's byte-level BPE on a vocabulary written here,
// SentencePiece against spm_encode, and the scene of one head against that head computed from the weights.
// The forward pass itself is checked against an independent NumPy implementation
// (tests/python/test_models.py).
#include "../ModelFiles.h"
#include "../TempDir.h"
#include "TestUtil.h"

#include "engine/attention/VelocityField.h"
#include "engine/models/Model.h"
#include "engine/models/ModelAnalysis.h"
#include "engine/models/Tokenizer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;
using namespace flowscope;
using flowscope::test::TempDir;

TEST(Checkpoint, RefusesAMissingKeyAWrongShapeAndABadConfigNamingThem) {
    TempDir dir;
    test::TinyModel m = test::writeTinyGpt2(dir.path() / "gpt2");
    EXPECT_EQ(test::errorOf([&] { models::Checkpoint c(m.dir); }), "");
    SafeTensors edited = m.tensors;
    edited.tensors.erase(edited.tensors.begin() + 5); // h.0.attn.c_attn.bias
    writeSafetensors(m.dir + "/model.safetensors", edited);
    std::string e = test::errorOf([&] { models::Checkpoint c(m.dir); });
    EXPECT_NE(e.find("tensor 'h.0.attn.c_attn.bias' is missing"), std::string::npos) << e;

    edited = m.tensors;
    std::mt19937_64 rng(1);
    edited.tensors[4] = test::randomTensor(rng, "h.0.attn.c_attn.weight", 12, 24, 1, 0, false);
    writeSafetensors(m.dir + "/model.safetensors", edited);
    e = test::errorOf([&] { models::Checkpoint c(m.dir); });
    EXPECT_NE(e.find("tensor 'h.0.attn.c_attn.weight' has shape [12, 24], expected [12, 36]"),
              std::string::npos)
        << e;

    std::ofstream(m.dir + "/config.json")
        << R"({"model_type": "gpt2", "n_embd": 12, "n_head": 5, "n_layer": 2,
        "n_positions": 16, "vocab_size": 40})";
    e = test::errorOf([&] { models::Checkpoint c(m.dir); });
    EXPECT_NE(e.find("config.json: /n_head: expected a divisor of the width 12, got 5"), std::string::npos)
        << e;
    std::ofstream(m.dir + "/config.json") << R"({"model_type": "gpt2", "n_embd": 12, "n_layer": 2,
        "n_positions": 16, "vocab_size": 40})";
    e = test::errorOf([&] { models::Checkpoint c(m.dir); });
    EXPECT_NE(e.find("/n_head: required field is missing"), std::string::npos) << e;
}

TEST(Checkpoint, TheLastGpt2StateIsAfterLnFAndAlbertRunsBeyondItsConfig) {
    TempDir dir;
    const test::TinyModel m = test::writeTinyGpt2(dir.path() / "gpt2");
    const models::Checkpoint c(m.dir);
    const auto w = c.weights<double>();
    const std::vector<int> ids{1, 2, 3, 4};
    const auto two = models::hiddenStates(c.config(), w, ids, 2);
    const auto one = models::hiddenStates(c.config(), w, ids, 1);
    ASSERT_EQ(two.size(), 3u);
    // ln_f's output has, per token, mean(shift) ... the mean of (y - shift) / gain over the row is 0 and its
    // variance is var/(var + eps) ~ 1: the marks of a LayerNorm.
    const Eigen::RowVectorXd gain = test::tensorMatrix(m, "ln_f.weight"),
                             shift = test::tensorMatrix(m, "ln_f.bias");
    for (Eigen::Index i = 0; i < 4; ++i) {
        const Eigen::RowVectorXd u = (two[2].row(i) - shift).cwiseQuotient(gain);
        EXPECT_NEAR(u.mean(), 0.0, 1e-12);
        EXPECT_NEAR(u.squaredNorm() / 12.0, 1.0, 1e-3);
    }
    // The first layer's state does not depend on how many layers run after it (before ln_f).
    EXPECT_EQ(two[0], one[0]);
    const test::TinyModel a = test::writeTinyAlbert(dir.path() / "albert");
    const models::Checkpoint ca(a.dir);
    const auto wa = ca.weights<double>();
    const auto five = models::hiddenStates(ca.config(), wa, ids, 5);
    const auto three = models::hiddenStates(ca.config(), wa, ids, 3);
    ASSERT_EQ(five.size(), 6u);
    for (int l = 0; l <= 3; ++l) EXPECT_EQ(five[std::size_t(l)], three[std::size_t(l)]) << l;
    EXPECT_NE(test::errorOf([&] {
                  models::hiddenStates(c.config(), w, {1, 40}, 2);
              }).find("id 40 is outside"),
              std::string::npos);
}

// ---- GPT-2's BPE

TEST(BpeTokenizer, BytesToUnicodeIsGpt2sMap) {
    const auto& map = models::BpeTokenizer::bytesToUnicode();
    EXPECT_EQ(map['A'], "A");
    EXPECT_EQ(map[' '], "\u0120");  // Ġ: byte 32 is the 33rd non-printing byte, 256 + 32
    EXPECT_EQ(map['\n'], "\u010A"); // Ċ
    EXPECT_EQ(map[0xAD], "\u0143"); // the soft hyphen, the only non-printing byte above 0xA0: 256 + 67
    EXPECT_EQ(map[0xE9], "\u00E9");
}

TEST(BpeTokenizer, PreTokenizerFollowsGpt2sPattern) {
    using V = std::vector<std::string>;
    EXPECT_EQ(models::BpeTokenizer::preTokenize("Hello world's  end!!\n"),
              (V{"Hello", " world", "'s", " ", " end", "!!", "\n"}));
    EXPECT_EQ(models::BpeTokenizer::preTokenize("I'll pay 42 dollars,  ok?   "),
              (V{"I", "'ll", " pay", " 42", " dollars", ",", " ", " ok", "?", "   "}));
    EXPECT_EQ(models::BpeTokenizer::preTokenize("café ünd 3½"), (V{"café", " ünd", " 3½"}));
    EXPECT_EQ(models::BpeTokenizer::preTokenize(" \n x"), (V{" \n", " x"}));
}

TEST(BpeTokenizer, MergesLowestRankFirstOnAVocabularyWrittenHere) {
    TempDir dir;
    // Ranks: "a b" 0, "Ġ ab" 1, "ab c" 2, "c c" 3. " abc" -> Ġ a b c -> Ġ ab c (rank 0) -> Ġab c (rank 1 <
    // 2); "abc" -> ab c -> abc; "cccc" -> cc cc (both pairs of rank 3 merge left to right).
    std::ofstream(dir.file("merges.txt")) << "#version: 0.2\na b\n\u0120 ab\nab c\nc c\n";
    std::ofstream(dir.file("vocab.json"))
        << R"({"a": 0, "b": 1, "c": 2, "\u0120": 3, "ab": 4, "\u0120ab": 5, "abc": 6, "cc": 7})";
    const models::BpeTokenizer bpe(dir.file("vocab.json"), dir.file("merges.txt"));
    EXPECT_EQ(bpe.merge(" abc"), (std::vector<std::string>{"\u0120ab", "c"}));
    EXPECT_EQ(bpe.encode("abc abc"), (std::vector<int>{6, 5, 2}));
    EXPECT_EQ(bpe.encode("cccc"), (std::vector<int>{7, 7}));
    EXPECT_EQ(bpe.encode("ba"), (std::vector<int>{1, 0}));
    EXPECT_NE(test::errorOf([&] { bpe.encode("abd"); }).find("\"d\" is not in vocab.json"),
              std::string::npos);
    std::ofstream(dir.file("merges.txt")) << "a b\nab\n";
    EXPECT_NE(test::errorOf([&] {
                  models::BpeTokenizer(dir.file("vocab.json"), dir.file("merges.txt"));
              }).find("merges.txt: line 2: expected two symbols"),
              std::string::npos);
}

TEST(SentencePiece, EncodesAsSpmEncode) {
    if (!models::haveSentencePiece()) GTEST_SKIP() << "this build has no SentencePiece";
    if (std::system("command -v spm_train >/dev/null 2>&1 && command -v spm_encode >/dev/null 2>&1") != 0)
        GTEST_SKIP() << "spm_train / spm_encode are not installed (Debian: sentencepiece)";
    TempDir dir;
    {
        std::ofstream corpus(dir.file("corpus.txt"));
        const char* lines[] = {"the cat sat on the mat", "a mathematical perspective on transformers",
                               "tokens cluster as depth grows", "attention is a particle system",
                               "the layers of a model move the tokens"};
        for (int k = 0; k < 40; ++k) corpus << lines[k % 5] << " " << k << "\n";
    }
    const std::string train = "cd " + dir.str() + " && spm_train --input=corpus.txt --model_prefix=spiece " +
                              "--vocab_size=60 --model_type=unigram --character_coverage=1.0 >log.txt 2>&1";
    ASSERT_EQ(std::system(train.c_str()), 0);
    const std::string text = "the tokens of a mathematical model sat";
    std::ofstream(dir.file("input.txt")) << text << "\n";
    const std::string encode = "cd " + dir.str() + " && spm_encode --model=spiece.model --output_format=id " +
                               "<input.txt >ids.txt 2>>log.txt";
    ASSERT_EQ(std::system(encode.c_str()), 0);
    std::ifstream in(dir.file("ids.txt"));
    std::vector<int> want;
    for (int id; in >> id;) want.push_back(id);
    ASSERT_FALSE(want.empty());
    EXPECT_EQ(models::encodeSentencePiece(dir.file("spiece.model"), text), want);
}

// ---- the scene of one head

namespace {

// The velocity of head h of the layer from its tokens X (n x D, rows), computed from the raw tensors:
// GPT-2 (Conv1D, [in, out]) on ln_1(x), causal; ALBERT (nn.Linear, [out, in]) on z = x/|x| with the scores
// of r z (r^2 the mean |x|^2), projected on the sphere's tangent space.
Eigen::MatrixXd headVelocity(const test::TinyModel& m, bool gpt2, const Eigen::MatrixXd& X, int h) {
    const int D = m.D, dk = D / m.H;
    const Eigen::Index n = X.rows();
    Eigen::MatrixXd Z = X, Wq, Wk, Wv, Wo; // maps as column operators: q = Wq z
    double r2 = 1;
    if (gpt2) {
        const Eigen::MatrixXd c = test::tensorMatrix(m, "h.1.attn.c_attn.weight"); // D x 3D
        Wq = c.middleCols(h * dk, dk).transpose();
        Wk = c.middleCols(D + h * dk, dk).transpose();
        Wv = c.middleCols(2 * D + h * dk, dk).transpose();
        Wo = test::tensorMatrix(m, "h.1.attn.c_proj.weight").middleRows(h * dk, dk).transpose();
    } else {
        const std::string a = "albert.encoder.albert_layer_groups.0.albert_layers.0.attention.";
        Wq = test::tensorMatrix(m, a + "query.weight").middleRows(h * dk, dk);
        Wk = test::tensorMatrix(m, a + "key.weight").middleRows(h * dk, dk);
        Wv = test::tensorMatrix(m, a + "value.weight").middleRows(h * dk, dk);
        Wo = test::tensorMatrix(m, a + "dense.weight").middleCols(h * dk, dk);
        r2 = X.rowwise().squaredNorm().mean();
        Z = X.rowwise().normalized();
    }
    Eigen::MatrixXd V(n, D);
    for (Eigen::Index i = 0; i < n; ++i) {
        const Eigen::Index keys = gpt2 ? i + 1 : n;
        Eigen::VectorXd s(keys);
        for (Eigen::Index j = 0; j < keys; ++j)
            s(j) = r2 * (Wq * Z.row(i).transpose()).dot(Wk * Z.row(j).transpose()) / std::sqrt(double(dk));
        const Eigen::VectorXd p =
            (s.array() - s.maxCoeff()).exp().matrix() / (s.array() - s.maxCoeff()).exp().sum();
        Eigen::VectorXd o = Eigen::VectorXd::Zero(dk);
        for (Eigen::Index j = 0; j < keys; ++j) o += p(j) * (Wv * Z.row(j).transpose());
        Eigen::VectorXd u = Wo * o;
        if (!gpt2) u -= Z.row(i).transpose() * Z.row(i).dot(u);
        V.row(i) = u.transpose();
    }
    return V;
}

} // namespace

TEST(ModelScene, ItsFirstVelocityIsTheLayersHeadFromTheWeights) {
    TempDir dir;
    const std::vector<int> ids{5, 1, 29, 7, 7, 2};
    for (const bool gpt2 : {true, false}) {
        const test::TinyModel m =
            gpt2 ? test::writeTinyGpt2(dir.path() / "gpt2") : test::writeTinyAlbert(dir.path() / "albert");
        const models::Checkpoint c(m.dir);
        const auto w = c.weights<double>();
        const int layer = 1, head = 1;
        const auto states = models::hiddenStates(c.config(), w, ids, layer + 1);
        const Scene written = models::modelScene(c, w, states, layer, head);
        saveScene(written, dir.file("scene.json"));
        const Scene scene = loadScene(dir.file("scene.json")); // the ordinary scene reader
        EXPECT_EQ(scene.attention.sphere, !gpt2);
        EXPECT_EQ(scene.attention.masked, gpt2);
        const Tokens X = initialTokens(scene);
        Tokens dX(X.rows(), X.cols());
        makeCpuField(scene.attention, scene.d, Precision::Float64)->velocity(0.0, X, dX);
        // The oracle's inputs: GPT-2's ln_1 of the states entering layer 1; ALBERT's states themselves.
        Eigen::MatrixXd inputs = states[std::size_t(layer)];
        if (gpt2) {
            const Eigen::RowVectorXd g = test::tensorMatrix(m, "h.1.ln_1.weight"),
                                     b = test::tensorMatrix(m, "h.1.ln_1.bias");
            for (Eigen::Index i = 0; i < inputs.rows(); ++i) {
                Eigen::RowVectorXd x = inputs.row(i).array() - inputs.row(i).mean();
                x /= std::sqrt(x.squaredNorm() / double(x.size()) + 1e-5);
                inputs.row(i) = x.cwiseProduct(g) + b;
            }
        }
        const Eigen::MatrixXd want = headVelocity(m, gpt2, inputs, head);
        EXPECT_LE((dX - want).cwiseAbs().maxCoeff(), 1e-12 * want.cwiseAbs().maxCoeff())
            << (gpt2 ? "gpt2" : "albert");
    }
}

TEST(ModelScene, GramHistogramsOfIdenticalTokensSitInTheLastBin) {
    // Every token equal: every cosine is 1 (the last bin); orthonormal tokens: every cosine 0.
    std::vector<models::RowMat<double>> states(2);
    states[0] = models::RowMat<double>::Ones(5, 3);
    states[1] = models::RowMat<double>::Zero(3, 3);
    states[1].diagonal().setOnes();
    const auto same = models::gramHistograms({states[0]}, {0}, 4);
    EXPECT_EQ(same.counts[0], (std::vector<long>{0, 0, 0, 10}));
    EXPECT_NEAR(same.meanCosine[0], 1.0, 1e-15);
    EXPECT_NEAR(same.density[0][3], 10.0 / 10.0 / 0.5, 1e-15);
    const auto orth = models::gramHistograms({states[1]}, {0}, 4);
    EXPECT_EQ(orth.counts[0], (std::vector<long>{0, 0, 3, 0}));
    EXPECT_EQ(orth.meanCosine[0], 0.0);
}

// The histograms' log density axis: whole decades, the floor strictly below the smallest positive density
// (also when that is a power of ten), the top at or above the largest; log10 in between; an empty bin 0.
TEST(DensityAxis, TheLogAxisSpansWholeDecadesAroundTheDensities) {
    const models::DensityAxis a = models::DensityAxis::logarithmic(0.03, 4.2);
    EXPECT_DOUBLE_EQ(a.bottom, 0.01);
    EXPECT_DOUBLE_EQ(a.top, 10.0);
    EXPECT_NEAR(a.fraction(1.0), 2.0 / 3.0, 1e-15);
    EXPECT_NEAR(a.fraction(0.03) - a.fraction(0.3), -1.0 / 3.0, 1e-15);
    EXPECT_EQ(a.fraction(0.0), 0.0);
    EXPECT_EQ(a.fraction(10.0), 1.0);
    const models::DensityAxis b = models::DensityAxis::logarithmic(0.01, 10.0);
    EXPECT_DOUBLE_EQ(b.bottom, 0.001);
    EXPECT_DOUBLE_EQ(b.top, 10.0);
    EXPECT_GT(b.fraction(0.01), 0.0);
    const models::DensityAxis linear = models::DensityAxis::linear(2.5);
    EXPECT_DOUBLE_EQ(linear.fraction(1.0), 0.4);
    EXPECT_EQ(linear.fraction(0.0), 0.0);
}
