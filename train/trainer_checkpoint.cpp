#include "train/trainer_checkpoint.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "data/tokenizer_files.h"
#include "engine/input_file.h"
#include "engine/safetensors.h"
#include "kernels/unigram_sample.h"
#include "models/embeddings.h"
#include "models/hf_checkpoint.h"

namespace electra {
namespace fs = std::filesystem;

namespace {

constexpr const char* kStateTensors = "trainer_state.safetensors";
constexpr const char* kUnigramCounts = "unigram.counts";

// The saved unigram counts of a generator: unigram run: f64 [V] non-negative integers.
std::vector<uint64_t> read_unigram_counts(const SafetensorsFile& file, int64_t vocab) {
  const std::string& path = file.path();
  const SafetensorsEntry* e = file.find(kUnigramCounts);
  ELECTRA_USER_CHECK(e != nullptr, path, ": missing tensor '", kUnigramCounts,
                     "' (a checkpoint of a run without generator: unigram?)");
  ELECTRA_USER_CHECK(e->dtype == "F64" && e->numel() == vocab, path, ": tensor '", kUnigramCounts,
                     "' must be F64 [", vocab, "], got ", e->dtype, " with ", e->numel(),
                     " values");
  std::vector<double> values(static_cast<size_t>(vocab));
  std::memcpy(values.data(), file.data(*e), values.size() * sizeof(double));
  std::vector<uint64_t> counts(values.size());
  for (size_t v = 0; v < values.size(); ++v) {
    ELECTRA_USER_CHECK(
        values[v] >= 0 && values[v] < 9007199254740992.0 && values[v] == std::floor(values[v]),
        path, ": tensor '", kUnigramCounts, "' holds ", values[v], " at index ", v,
        " (not a count)");
    counts[v] = static_cast<uint64_t>(values[v]);
  }
  return counts;
}
constexpr const char* kStateJson = "trainer_state.json";

std::string hex16(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

std::string checkpoint_name(int64_t step) {
  char name[32];
  std::snprintf(name, sizeof name, "checkpoint-%08lld", static_cast<long long>(step));
  return name;
}

// Complete checkpoints in run_dir, oldest first.
std::vector<fs::path> list_checkpoints(const fs::path& run_dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(run_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory() && name.rfind("checkpoint-", 0) == 0 &&
        fs::exists(entry.path() / kStateJson)) {
      out.push_back(entry.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A host f32 copy of a device (or host) tensor.
std::vector<float> to_host(Context& ctx, const Tensor& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  copy_tensor(ctx.stream(), Tensor::view_of(out.data(), Device::CPU, {t.numel()}),
              t.reshape({t.numel()}));
  return out;
}

// The optimizer moments are stored in the store's layout without padding rows
// (ParamInfo::unpadded_offset): the padding of the generator's vocabulary is internal, and a
// checkpoint is the same file with or without it. Alignment gaps stay (their moments are 0).
std::vector<float> without_padding(const ParameterStore& store, const std::vector<float>& flat) {
  std::vector<float> out(static_cast<size_t>(store.unpadded_total()), 0.0f);
  for (const ParamInfo& p : store.params()) {
    std::copy_n(flat.begin() + p.offset, p.numel, out.begin() + p.unpadded_offset);
  }
  return out;
}

std::vector<float> with_padding(const ParameterStore& store, const std::vector<float>& stored) {
  std::vector<float> out(static_cast<size_t>(store.total_elements()), 0.0f);
  for (const ParamInfo& p : store.params()) {
    std::copy_n(stored.begin() + p.unpadded_offset, p.numel, out.begin() + p.offset);
  }
  return out;
}

}  // namespace

std::string save_checkpoint(Context& ctx, const ElectraPretrainer& model,
                            const Optimizer& optimizer, const TrainerState& state,
                            const std::string& run_dir, int64_t keep, const data::Vocab* vocab) {
  const fs::path run(run_dir);
  std::error_code ec;
  fs::create_directories(run, ec);
  ELECTRA_USER_CHECK(!ec, run_dir, ": cannot create the checkpoint directory: ", ec.message());
  const fs::path final_dir = run / checkpoint_name(state.step);
  const fs::path tmp_dir = run / ("." + checkpoint_name(state.step) + ".tmp");
  fs::remove_all(tmp_dir, ec);
  try {
    fs::create_directories(tmp_dir);
    save_pretrainer_models(ctx, model, tmp_dir.string());
    if (vocab != nullptr) {
      // The shards do not record the casing; the vocabulary shows it (data/tokenizer_files.h).
      for (const char* part : {"discriminator", "generator"}) {
        if (!fs::exists(tmp_dir / part)) continue;  // no generator with the mlm objective
        data::write_tokenizer_files((tmp_dir / part).string(), *vocab,
                                    data::uncased_vocabulary(*vocab),
                                    model.config().discriminator.max_positions);
      }
    }
    const ParameterStore& store = model.store();
    std::vector<float> m = without_padding(store, to_host(ctx, optimizer.m()));
    std::vector<float> v = without_padding(store, to_host(ctx, optimizer.v()));
    const int64_t n = static_cast<int64_t>(m.size());
    require_finite((final_dir / kStateTensors).string(), "optimizer.m", m.data(), n);
    require_finite((final_dir / kStateTensors).string(), "optimizer.v", v.data(), n);
    std::vector<NamedTensor> tensors = {
        {"optimizer.m", Tensor::view_of(m.data(), Device::CPU, {n})},
        {"optimizer.v", Tensor::view_of(v.data(), Device::CPU, {n})}};
    // generator: unigram: the counts of the run's data, so that a resume does not recount (f64:
    // exact, their total is below 2^53).
    const std::vector<uint64_t>& counts = model.unigram_counts();
    std::vector<double> unigram(counts.begin(), counts.end());
    if (!unigram.empty()) {
      tensors.push_back({kUnigramCounts, Tensor::view_of(unigram.data(), Device::CPU,
                                                         {static_cast<int64_t>(unigram.size())})});
    }
    // sharing: gdes: the residual tables exactly (discriminator/ holds E_G + E_delta, from which
    // E_delta comes back only up to a rounding).
    std::vector<std::vector<float>> residuals;
    for (const ParamInfo& p : store.params()) {
      if (!is_gdes_residual(p.name)) continue;
      residuals.push_back(to_host(ctx, store.param(p.name)));
      tensors.push_back({p.name, Tensor::view_of(residuals.back().data(), Device::CPU, {p.numel})});
    }
    write_safetensors((tmp_dir / kStateTensors).string(), tensors, {{"format", "electra-engine"}});
    nlohmann::json j;
    j["step"] = state.step;
    j["data_epoch"] = state.cursor.epoch;
    j["data_position"] = state.cursor.position;
    j["seed"] = state.seed;
    j["config_hash"] = str_cat(state.config_hash);
    j["config"] = state.config_text;
    j["elapsed_seconds"] = state.elapsed_seconds;
    j["world_size"] = state.world_size;
    j["local_accumulation"] = state.local_accumulation;
    j["device"] = state.device;
    j["attention"] = state.attention;
    j["fused_layers"] = state.fused_layers;
    const StepMetrics& last = state.metrics;
    j["last_update"] = {{"gen_loss", last.gen_loss},     {"gen_accuracy", last.gen_accuracy},
                        {"disc_loss", last.disc_loss},   {"disc_accuracy", last.disc_accuracy},
                        {"total_loss", last.total_loss}, {"grad_norm", state.grad_norm}};
    j["optimizer"] = optimizer_kind_name(optimizer.config().kind);
    nlohmann::json shards = nlohmann::json::array();
    for (const ShardRecord& r : state.shards) {
      shards.push_back({{"name", r.name},
                        {"bytes", r.bytes},
                        {"checksum", hex16(r.checksum)},
                        {"examples", r.examples}});
    }
    j["shards"] = shards;
    write_file_atomic((tmp_dir / kStateJson).string(), j.dump(2) + "\n");
    if (fs::exists(final_dir)) fs::remove_all(final_dir);
    fs::rename(tmp_dir, final_dir);
  } catch (const fs::filesystem_error& e) {
    fs::remove_all(tmp_dir, ec);
    throw UserError(str_cat(final_dir.string(), ": cannot write the checkpoint: ", e.what()));
  } catch (...) {
    fs::remove_all(tmp_dir, ec);
    throw;
  }
  if (keep > 0) {
    const std::vector<fs::path> all = list_checkpoints(run);
    for (size_t i = 0; i + static_cast<size_t>(keep) < all.size(); ++i) fs::remove_all(all[i], ec);
  }
  return final_dir.string();
}

std::string resume_bits_note(const TrainerState& saved, const TrainerState& now) {
  if (saved.device.empty()) return {};
  const auto on_cpu = [](const TrainerState& s) { return s.device == "cpu"; };
  const bool same_kernels =
      saved.attention == now.attention && saved.fused_layers == now.fused_layers;
  if (saved.device == now.device && (on_cpu(now) || same_kernels)) return {};
  const auto kernels = [&](const TrainerState& s) {
    return on_cpu(s) ? std::string("on the CPU")
                     : str_cat("on ", s.device, " with model.attention ", s.attention,
                               s.fused_layers ? "" : " and model.fused_layers false");
  };
  return str_cat("the checkpoint was computed ", kernels(saved), ", this run ", kernels(now),
                 ": the updates from here on are not the bits an uninterrupted run would give");
}

std::string resolve_checkpoint(const std::string& path) {
  const fs::path p(path);
  ELECTRA_USER_CHECK(fs::is_directory(p), path, ": no such checkpoint or run directory");
  if (fs::exists(p / kStateJson)) return p.string();
  const std::vector<fs::path> all = list_checkpoints(p);
  ELECTRA_USER_CHECK(!all.empty(), path, ": no complete checkpoint-* directory in it");
  return all.back().string();
}

std::optional<std::map<std::string, std::string>> read_run_config(
    const std::string& discriminator_dir) {
  const fs::path state = fs::path(discriminator_dir).parent_path() / kStateJson;
  if (!fs::is_regular_file(state)) return std::nullopt;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(std::ifstream(state));
  } catch (const nlohmann::json::exception& e) {
    throw UserError(str_cat(state.string(), ": not JSON (", e.what(), ")"));
  }
  ELECTRA_USER_CHECK(j.contains("config") && j["config"].is_string(), state.string(),
                     ": no \"config\" string");
  std::map<std::string, std::string> config;
  std::istringstream lines(j["config"].get<std::string>());
  for (std::string line; std::getline(lines, line);) {
    const size_t eq = line.find('=');
    if (eq != std::string::npos) config[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return config;
}

TrainerState read_trainer_state(const std::string& checkpoint_dir) {
  const std::string path = (fs::path(checkpoint_dir) / kStateJson).string();
  require_regular_file(path, "trainer state file");
  std::ifstream in(path);
  ELECTRA_USER_CHECK(in.good(), path, ": cannot open");
  nlohmann::json j;
  try {
    in >> j;
    TrainerState s;
    // A run never counts 2^32 updates, epochs or examples (pretrain and ExampleOrder refuse it).
    auto counter = [&](const char* key) -> uint64_t {
      const nlohmann::json& v = j.at(key);
      ELECTRA_USER_CHECK(v.is_number_unsigned() && v.get<uint64_t>() < (uint64_t{1} << 32), path,
                         ": ", key, " must be an integer in [0, 2^32), got ", v.dump());
      return v.get<uint64_t>();
    };
    s.step = static_cast<int64_t>(counter("step"));
    s.cursor.epoch = counter("data_epoch");
    s.cursor.position = counter("data_position");
    s.seed = j.at("seed").get<uint64_t>();
    s.config_hash = std::stoull(j.at("config_hash").get<std::string>());
    s.config_text = j.at("config").get<std::string>();
    s.elapsed_seconds = j.value("elapsed_seconds", 0.0);
    s.world_size = j.value("world_size", int64_t{1});
    s.local_accumulation = j.value("local_accumulation", int64_t{1});
    s.device = j.value("device", std::string{});
    s.attention = j.value("attention", std::string{});
    s.fused_layers = j.value("fused_layers", true);
    if (j.contains("last_update")) {
      const nlohmann::json& u = j.at("last_update");
      s.metrics.gen_loss = u.at("gen_loss").get<double>();
      s.metrics.gen_accuracy = u.at("gen_accuracy").get<double>();
      s.metrics.disc_loss = u.at("disc_loss").get<double>();
      s.metrics.disc_accuracy = u.at("disc_accuracy").get<double>();
      s.metrics.total_loss = u.at("total_loss").get<double>();
      s.grad_norm = u.at("grad_norm").get<double>();
    }
    for (const nlohmann::json& r : j.value("shards", nlohmann::json::array())) {
      s.shards.push_back({r.at("name").get<std::string>(), r.at("bytes").get<uint64_t>(),
                          std::stoull(r.at("checksum").get<std::string>(), nullptr, 16),
                          r.at("examples").get<uint64_t>()});
    }
    return s;
  } catch (const nlohmann::json::exception& e) {
    throw UserError(str_cat(path, ": malformed trainer state: ", e.what()));
  } catch (const std::logic_error& e) {
    throw UserError(str_cat(path, ": malformed config_hash or shard checksum: ", e.what()));
  }
}

std::vector<ShardRecord> record_shards(const data::ShardSet& shards) {
  std::vector<ShardRecord> out;
  for (const data::ShardFile& f : shards.shards()) {
    std::error_code ec;
    const uintmax_t bytes = fs::file_size(f.path(), ec);
    out.push_back({fs::path(f.path()).filename().string(), ec ? 0 : static_cast<uint64_t>(bytes),
                   f.header().payload_checksum, f.size()});
  }
  return out;
}

void check_resume_data(const TrainerState& saved, std::vector<ShardRecord> now,
                       const std::string& checkpoint_dir) {
  const std::string path = (fs::path(checkpoint_dir) / kStateJson).string();
  auto named = [](const std::vector<ShardRecord>& list, const std::string& name) {
    return std::find_if(list.begin(), list.end(),
                        [&](const ShardRecord& r) { return r.name == name; });
  };
  std::string changes;
  // Checkpoints written before the shard set was recorded carry none: nothing to compare.
  if (saved.shards.empty()) now = {};
  auto note = [&](const std::string& what) { changes += (changes.empty() ? "" : "; ") + what; };
  for (const ShardRecord& r : saved.shards) {
    const auto it = named(now, r.name);
    if (it == now.end()) {
      note(str_cat(r.name, " was removed"));
    } else if (!(*it == r)) {
      note(str_cat(r.name, " changed (", r.examples, " examples, ", r.bytes, " bytes, checksum ",
                   hex16(r.checksum), " -> ", it->examples, " examples, ", it->bytes,
                   " bytes, checksum ", hex16(it->checksum), ")"));
    }
  }
  for (const ShardRecord& r : now) {
    if (named(saved.shards, r.name) == saved.shards.end()) note(str_cat(r.name, " was added"));
  }
  if (changes.empty() && saved.shards != now) note("the shards' order changed");
  ELECTRA_USER_CHECK(
      changes.empty(), path, ": the run's data differs from the data it was trained on: ", changes,
      "; a resume continues exactly on the same data (to continue training on new data "
      "from this checkpoint's weights, start a new run with --init)");
}

void check_data_position(const TrainerState& saved, uint64_t examples,
                         const std::string& checkpoint_dir) {
  const std::string path = (fs::path(checkpoint_dir) / kStateJson).string();
  ELECTRA_USER_CHECK(saved.cursor.position < examples, path, ": data_position ",
                     saved.cursor.position, " is beyond the data's ", examples, " examples");
}

void load_checkpoint(Context& ctx, ElectraPretrainer& model, Optimizer& optimizer,
                     const std::string& checkpoint_dir) {
  const std::string path = (fs::path(checkpoint_dir) / kStateTensors).string();
  const SafetensorsFile file = SafetensorsFile::read(path);
  const ParameterStore& store = model.store();
  const int64_t n = store.unpadded_total();
  std::vector<float> m(static_cast<size_t>(n)), v(static_cast<size_t>(n));
  for (auto [name, dst] : {std::pair{"optimizer.m", &m}, std::pair{"optimizer.v", &v}}) {
    const SafetensorsEntry* e = file.find(name);
    ELECTRA_USER_CHECK(e != nullptr, path, ": missing tensor '", name, "'");
    ELECTRA_USER_CHECK(e->numel() == n, path, ": tensor '", name, "' has ", e->numel(),
                       " values, the model's optimizer state has ", n,
                       " (a checkpoint of another model?)");
    file.read_f32(*e, dst->data());
    require_finite(path, name, dst->data(), n);
  }
  const bool unigram = model.options().generator == GeneratorKind::kUnigram;
  const std::vector<uint64_t> counts =
      unigram ? read_unigram_counts(file, model.config().discriminator.vocab_size)
              : std::vector<uint64_t>{};
  if (unigram) unigram_cdf(counts);  // validates (non-empty) before anything is written
  // sharing: gdes: the exact residual tables, validated before anything is written.
  std::vector<std::pair<std::string, std::vector<float>>> residuals;
  for (const ParamInfo& p : store.params()) {
    if (!is_gdes_residual(p.name)) continue;
    const SafetensorsEntry* e = file.find(p.name);
    ELECTRA_USER_CHECK(e != nullptr, path, ": missing tensor '", p.name,
                       "' (a checkpoint of a run without sharing: gdes?)");
    ELECTRA_USER_CHECK(e->numel() == p.numel, path, ": tensor '", p.name, "' has ", e->numel(),
                       " values, the model's has ", p.numel);
    std::vector<float> values(static_cast<size_t>(p.numel));
    file.read_f32(*e, values.data());
    require_finite(path, p.name, values.data(), p.numel);
    residuals.emplace_back(p.name, std::move(values));
  }
  // The models validate both directories before writing; the moments go in only afterwards.
  load_pretrainer_models(ctx, model, checkpoint_dir);
  if (unigram) model.set_unigram_counts(ctx, counts);
  for (const auto& [name, values] : residuals) load_host_values(ctx, store, name, values);
  model.weights().refresh_compute(ctx);
  m = with_padding(store, m);
  v = with_padding(store, v);
  const int64_t total = store.total_elements();
  copy_tensor(ctx.stream(), optimizer.m(), Tensor::view_of(m.data(), Device::CPU, {total}));
  copy_tensor(ctx.stream(), optimizer.v(), Tensor::view_of(v.data(), Device::CPU, {total}));
}

}  // namespace electra
