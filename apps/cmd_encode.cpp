// electra encode: the discriminator's hidden states for a user's own text, per line (pooled) or
// per token, as JSON lines or a NumPy .npy array.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "apps/command.h"
#include "apps/text_inference.h"
#include "engine/safetensors.h"

namespace electra::apps {
namespace {

constexpr const char* kUsage =
    "usage: electra encode --checkpoint DIR --input FILE [--output FILE.jsonl|FILE.npy]\n"
    "                      [--layer -1] [--pool cls|mean] [--tokens] [--vocab vocab.txt]\n"
    "                      [--batch-size 32] [--max-seq-len N] [--device auto|cpu|cuda]\n"
    "                      [--threads N (CPU threads; 0, the default: all cores)]\n"
    "  hidden states of the discriminator for each line of FILE ([CLS] line [SEP], truncated to\n"
    "  --max-seq-len, default min(512, the model's max_position_embeddings))\n"
    "  --checkpoint  a pre-training checkpoint or run directory, an HF ELECTRA directory or a\n"
    "                fine-tuned checkpoint (its encoder)\n"
    "  --layer       which hidden state: 0 the embeddings, 1..L the layers, negative from the end\n"
    "                (-1, the default: the last layer), as HF's output_hidden_states\n"
    "  --pool        one vector per line: cls (the [CLS] vector, the default) or mean (over the\n"
    "                line's tokens, [CLS] and [SEP] included)\n"
    "  --tokens      one vector per WordPiece token instead (JSON lines only)\n"
    "  --output      FILE.jsonl: {\"line\", \"text\", \"vector\"} or {\"line\", \"text\",\n"
    "                \"tokens\", \"vectors\"} per line; FILE.npy: float32 [lines, hidden];\n"
    "                default: JSON lines on stdout\n";

bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// A float32 C-order NumPy array [rows, cols] (format version 1.0).
std::string npy_bytes(const std::vector<float>& values, size_t rows, size_t cols) {
  std::string header =
      str_cat("{'descr': '<f4', 'fortran_order': False, 'shape': (", rows, ", ", cols, "), }");
  // magic (6) + version (2) + header length (2) + header + '\n', padded to a multiple of 64.
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  return out;
}

}  // namespace

int cmd_encode(const std::vector<std::string>& args) {
  TextInferenceArgs a;
  std::string layer_text = "-1", pool = "cls";
  bool tokens = false, pool_given = false;
  ArgParser parser("encode", kUsage);
  add_text_inference_args(parser, a)
      .value("--layer", [&](const std::string& v) { layer_text = v; })
      .value("--pool",
             [&](const std::string& v) {
               ELECTRA_USER_CHECK(v == "cls" || v == "mean", "--pool must be cls or mean, got '", v,
                                  "'");
               pool = v;
               pool_given = true;
             })
      .switch_flag("--tokens", [&] { tokens = true; });
  if (!parser.parse(args)) return 0;
  const bool npy = ends_with(a.output, ".npy");
  ELECTRA_USER_CHECK(a.output.empty() || npy || ends_with(a.output, ".jsonl"), "--output ",
                     a.output, ": use a .jsonl or .npy file name");
  ELECTRA_USER_CHECK(!(npy && tokens),
                     "--tokens gives one vector per token, a different number per line: write "
                     "it as .jsonl, not .npy");
  ELECTRA_USER_CHECK(!(tokens && pool_given),
                     "--pool does not apply with --tokens (every token's vector is written)");
  int layer = 0;
  try {
    size_t used = 0;
    layer = std::stoi(layer_text, &used);
    ELECTRA_USER_CHECK(used == layer_text.size(), "");
  } catch (const std::exception&) {
    throw UserError(str_cat("--layer expects an integer, got '", layer_text, "'"));
  }

  ELECTRA_USER_CHECK(!a.checkpoint.empty(),
                     "--checkpoint is required (see 'electra encode --help')");
  const int layers = resolve_init(a.checkpoint).encoder.layers;
  ELECTRA_USER_CHECK(layer >= -(layers + 1) && layer <= layers, "--layer ", layer, " is outside [",
                     -(layers + 1), ", ", layers, "] (the model has ", layers,
                     " layers; 0 is the embeddings)");
  const int index = layer < 0 ? layers + 1 + layer : layer;
  TextInference run("encode", a, /*with_head=*/false);
  const size_t h = static_cast<size_t>(run.model().config().hidden);
  const size_t t = static_cast<size_t>(run.model().seq_len());
  const data::Vocab& vocab = run.tokenizer().vocab;

  std::vector<float> pooled;  // .npy: [lines, H]
  std::string jsonl;
  std::vector<float> states;
  run.run([&](size_t line, size_t row) {
    if (row == 0) states = run.model().hidden(run.ctx(), index);
    const TextLine& l = run.lines()[line];
    const float* base = states.data() + row * t * h;
    nlohmann::json j = {{"line", line + 1}, {"text", l.text}};
    if (tokens) {
      std::vector<std::string> pieces;
      std::vector<std::vector<float>> vectors;
      for (size_t i = 0; i < l.ids.size(); ++i) {
        pieces.emplace_back(vocab.token(l.ids[i]));
        vectors.emplace_back(base + i * h, base + (i + 1) * h);
      }
      j["tokens"] = pieces;
      j["vectors"] = vectors;
    } else {
      std::vector<float> v(base, base + h);
      if (pool == "mean") {
        std::vector<double> sum(h, 0.0);
        for (size_t i = 0; i < l.ids.size(); ++i) {
          for (size_t k = 0; k < h; ++k) sum[k] += base[i * h + k];
        }
        for (size_t k = 0; k < h; ++k) v[k] = static_cast<float>(sum[k] / l.ids.size());
      }
      if (npy) {
        pooled.insert(pooled.end(), v.begin(), v.end());
        return;
      }
      j["vector"] = v;
    }
    jsonl += j.dump() + "\n";
  });
  if (npy) {
    write_file_atomic(a.output, npy_bytes(pooled, run.lines().size(), h));
  } else if (!a.output.empty()) {
    write_file_atomic(a.output, jsonl);
  } else {
    std::fwrite(jsonl.data(), 1, jsonl.size(), stdout);
  }
  if (!a.output.empty()) {
    std::fprintf(stderr, "encode: wrote %s (%zu lines, layer %d, %s)\n", a.output.c_str(),
                 run.lines().size(), index, tokens ? "per token" : pool.c_str());
  }
  return 0;
}

}  // namespace electra::apps
