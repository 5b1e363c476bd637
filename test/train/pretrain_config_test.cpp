// PretrainConfig (train/pretrain_config.h): the shipped configs parse and carry the paper's Table 6
// values; strict parsing (unknown key, wrong type, bad --set) names file, line and key; range
// checks; the config hash.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "train/pretrain_config.h"

using namespace electra;

namespace {

std::string config_path(const std::string& name) {
  return std::string(ELECTRA_SOURCE_DIR) + "/configs/electra-" + name + ".yaml";
}

// A YAML file in a fresh temporary directory (removed with the object).
struct TempConfig {
  std::filesystem::path dir;
  std::string path;
  explicit TempConfig(const std::string& text) {
    dir = std::filesystem::temp_directory_path() /
          ("pretrain_config_test_" + std::to_string(reinterpret_cast<uintptr_t>(this)));
    std::filesystem::create_directories(dir);
    path = (dir / "run.yaml").string();
    std::ofstream(path) << text;
  }
  ~TempConfig() { std::filesystem::remove_all(dir); }
};

const char* kMinimal =
    "model:\n"
    "  preset: tiny\n"
    "data:\n"
    "  shards: a/shards, b/one.bin\n"
    "  vocab: a/vocab.txt\n"
    "train:\n"
    "  batch_size: 32\n"
    "  micro_batch_size: 8\n"
    "  seq_len: 64\n"
    "  steps: 100\n"
    "optimizer:\n"
    "  lr: 1.0e-3\n"
    "logging:\n"
    "  every: 5\n";

}  // namespace

TEST_CASE("every shipped config parses", "[pretrain_config]") {
  for (const char* name : {"tiny", "small", "base", "large"}) {
    INFO(name);
    const PretrainConfig c = read_pretrain_config(config_path(name), {});
    CHECK(c.optimizer.kind == OptimizerKind::kAdamW);
    CHECK(c.optimizer.schedule.kind == ScheduleKind::kLinear);
    CHECK(c.optimizer.schedule.total_steps == c.train.steps);
    CHECK_FALSE(c.optimizer.bias_correction);
    CHECK(c.optimizer.eps == 1e-6f);
    CHECK(c.optimizer.weight_decay == 0.01f);
    CHECK(c.optimizer.max_grad_norm == 1.0f);
    CHECK(c.train.disc_weight == 50.0);
    CHECK(c.masking.mask_token_prob == 0.85);
    CHECK(c.masking.temperature == 1.0);
    // Base and Large accumulate micro-batches of 64 that fit an 80 GB GPU (pretrain --dry-run).
    const bool accumulates = std::string(name) == "base" || std::string(name) == "large";
    CHECK(c.train.micro_batch_auto != accumulates);
    if (accumulates) CHECK(c.train.micro_batch_size == 64);
    CHECK(c.distributed.bucket_mb == 25.0);
    CHECK(c.distributed.timeout_s == 600.0);
    CHECK(!describe(c, "CPU", Precision::F32, false).empty());
  }
}

TEST_CASE("the paper-size configs carry Table 6", "[pretrain_config]") {
  struct Row {
    const char* name;
    int layers, hidden, heads, ffn, embedding;
    double multiplier, lr;
    int64_t batch, steps, seq;
    double mask;
    int gen_hidden;
  };
  const Row rows[] = {
      {"small", 12, 256, 4, 1024, 128, 0.25, 5e-4, 128, 1000000, 128, 0.15, 64},
      {"base", 12, 768, 12, 3072, 768, 1.0 / 3.0, 2e-4, 256, 766000, 512, 0.15, 256},
      {"large", 24, 1024, 16, 4096, 1024, 0.25, 2e-4, 2048, 400000, 512, 0.25, 256},
  };
  for (const Row& r : rows) {
    INFO(r.name);
    const PretrainConfig c = read_pretrain_config(config_path(r.name), {});
    const EncoderConfig& d = c.model.discriminator;
    CHECK(d.layers == r.layers);
    CHECK(d.hidden == r.hidden);
    CHECK(d.heads == r.heads);
    CHECK(d.ffn == r.ffn);
    CHECK(d.embedding_size == r.embedding);
    CHECK(d.vocab_size == 30522);
    CHECK(d.hidden_dropout == 0.1f);
    CHECK(d.attention_dropout == 0.1f);
    CHECK(c.model.generator_multiplier == Approx(r.multiplier).epsilon(1e-15));
    CHECK(c.model.generator().hidden == r.gen_hidden);
    CHECK(c.optimizer.schedule.peak == r.lr);
    CHECK(c.optimizer.schedule.warmup_steps == 10000);
    CHECK(c.train.batch_size == r.batch);
    // Small runs its batch at once; Base and Large accumulate micro-batches of 64.
    CHECK(c.train.micro_batch_size == (r.batch > 128 ? 64 : r.batch));
    CHECK(c.train.steps == r.steps);
    CHECK(c.train.seq_len == r.seq);
    CHECK(c.masking.mask_prob == r.mask);
    CHECK(c.optimizer.beta1 == 0.9f);
    CHECK(c.optimizer.beta2 == 0.999f);
  }
}

TEST_CASE("the tiny config is the demo's", "[pretrain_config]") {
  const PretrainConfig c = read_pretrain_config(config_path("tiny"), {});
  const EncoderConfig& d = c.model.discriminator;
  CHECK(d.embedding_size == 64);
  CHECK(d.hidden == 128);
  CHECK(d.layers == 2);
  CHECK(d.heads == 2);
  CHECK(d.ffn == 512);
  CHECK(d.max_positions == 128);
  CHECK(c.model.generator_multiplier == 0.5);
  CHECK(c.train.seq_len == 128);
  CHECK(c.train.batch_size == 16);
  CHECK(c.train.steps == 300);
  CHECK(c.optimizer.schedule.warmup_steps == 30);
  CHECK(c.train.device == TrainDevice::kAuto);
  CHECK(c.checkpoint.every == 100);
  CHECK(c.log_every == 10);
  CHECK(c.shards == std::vector<std::string>{"runs/demo/shards"});
  CHECK(c.vocab == "runs/demo/vocab.txt");
}

TEST_CASE("a minimal config gets the defaults", "[pretrain_config]") {
  TempConfig file(kMinimal);
  const PretrainConfig c = read_pretrain_config(file.path, {});
  CHECK(c.shards == std::vector<std::string>{"a/shards", "b/one.bin"});
  CHECK(c.train.accumulation_steps() == 4);
  CHECK(c.train.seed == 1);
  CHECK(c.train.precision == Precision::BF16);
  CHECK(c.train.threads == 0);  // all cores
  CHECK(c.masking.mask_prob == 0.15);
  CHECK(c.optimizer.schedule.peak == 1e-3);
  CHECK(c.optimizer.schedule.total_steps == 100);
  CHECK(c.checkpoint.keep == 3);
  CHECK(c.log_every == 5);
  CHECK(c.model_given);
}

TEST_CASE("a config without a model section says so (--init takes the checkpoint's sizes)",
          "[pretrain_config]") {
  const std::string minimal = kMinimal;
  TempConfig file(minimal.substr(minimal.find("data:")));
  const PretrainConfig c = read_pretrain_config(file.path, {});
  CHECK_FALSE(c.model_given);
  CHECK(c.model.discriminator.hidden == electra_preset("small").discriminator.hidden);
}

TEST_CASE("unknown keys and wrong types name the file, line and key", "[pretrain_config]") {
  {
    TempConfig file(std::string(kMinimal) + "masking:\n  mask_probability: 0.2\n");
    CHECK_THROWS_WITH(read_pretrain_config(file.path, {}),
                      file.path + ":16: unknown key 'masking.mask_probability'");
  }
  {
    TempConfig file(std::string(kMinimal) + "checkpoint:\n  every: often\n");
    CHECK_THROWS_WITH(read_pretrain_config(file.path, {}),
                      file.path + ":16: checkpoint.every: expected an integer, got 'often'");
  }
  {
    TempConfig file(std::string(kMinimal) + "train2:\n  steps: 1\n");
    CHECK_THROWS_WITH(read_pretrain_config(file.path, {}),
                      Catch::Contains(file.path + ":15: unknown key 'train2'"));
  }
  {
    TempConfig file("model: {preset: tiny}\ndata: {vocab: v.txt}\n");
    CHECK_THROWS_WITH(read_pretrain_config(file.path, {}),
                      Catch::Contains("missing required key 'data.shards'"));
  }
  CHECK_THROWS_WITH(read_pretrain_config("/nonexistent/run.yaml", {}),
                    Catch::Contains("/nonexistent/run.yaml: cannot open config"));
}

TEST_CASE("overrides (--set) change any key and a typo fails", "[pretrain_config]") {
  const std::string small = config_path("small");
  const PretrainConfig c = read_pretrain_config(
      small, {"train.batch_size=64", "optimizer.lr=1e-3", "model.layers=4", "train.device=cpu",
              "data.shards=x/shards,y/shards", "optimizer.kind=lamb", "schedule.kind=cosine"});
  CHECK(c.train.batch_size == 64);
  CHECK(c.optimizer.schedule.peak == 1e-3);
  CHECK(c.model.discriminator.layers == 4);
  CHECK(c.train.device == TrainDevice::kCpu);
  CHECK(c.shards == std::vector<std::string>{"x/shards", "y/shards"});
  CHECK(c.optimizer.kind == OptimizerKind::kLamb);
  CHECK(c.optimizer.schedule.kind == ScheduleKind::kCosine);
  CHECK_THROWS_WITH(read_pretrain_config(small, {"train.bach_size=64"}),
                    Catch::Contains("no key 'train.bach_size'"));
  CHECK_THROWS_WITH(read_pretrain_config(small, {"trian.steps=5"}),
                    Catch::Contains("no section 'trian'"));
  CHECK_THROWS_WITH(read_pretrain_config(small, {"train.steps=lots"}),
                    Catch::Contains("train.steps: expected an integer, got 'lots'"));
  CHECK_THROWS_WITH(read_pretrain_config(small, {"train.device=tpu"}),
                    Catch::Contains("train.device: 'tpu' is not one of: auto, cpu, cuda"));
}

TEST_CASE("out-of-range values are errors naming the key", "[pretrain_config]") {
  const std::string small = config_path("small");
  auto fails = [&](const std::string& set, const std::string& message) {
    INFO(set);
    CHECK_THROWS_WITH(read_pretrain_config(small, {set}),
                      Catch::Contains(small) && Catch::Contains(message));
  };
  fails("train.micro_batch_size=48",
        "train.batch_size must be a multiple of train.micro_batch_size (got 128 and 48)");
  fails("train.seq_len=1024", "train.seq_len must be in [8, model.max_positions = 512]");
  fails("train.batch_size=0", "train.batch_size must be positive");
  fails("train.steps=-3", "train.steps must be positive");
  fails("masking.mask_prob=1.5", "masking.mask_prob must be in (0, 1)");
  fails("masking.temperature=0", "masking.temperature must be positive");
  fails("optimizer.lr=0", "optimizer.lr must be positive");
  fails("logging.every=0", "logging.every must be positive");
  fails("checkpoint.keep=-1", "checkpoint.keep must be non-negative");
  fails("distributed.bucket_mb=0", "distributed.bucket_mb must be positive");
  fails("distributed.timeout_s=-1", "distributed.timeout_s must be positive");
  fails("data.shards=a,,b", "data.shards: empty path");
  fails("train.threads=-1", "train.threads must be in [0, 1024]");
  fails("train.threads=5000", "train.threads must be in [0, 1024]");
  // Model errors come from read_electra_config.
  CHECK_THROWS_WITH(read_pretrain_config(small, {"model.heads=5"}),
                    Catch::Contains("not divisible"));
  // An explicit flash choice on a shape flash cannot run (head dim 256 / 2 = 128 is the most; the
  // generator's 64 / 1 fits); auto and unfused run it.
  const std::vector<std::string> wide = {"model.heads=1", "model.attention=flash_ds"};
  CHECK_THROWS_WITH(read_pretrain_config(small, wide),
                    Catch::Contains(small + ": model.attention flash_ds needs T <= 512 and a head "
                                            "dim <= 128 (got T = 128, head dim 256 / 1 = 256)"));
  CHECK_NOTHROW(read_pretrain_config(small, {"model.heads=1", "model.attention=auto"}));
  CHECK_NOTHROW(read_pretrain_config(small, {"model.heads=2", "model.attention=flash"}));
}

TEST_CASE("config_hash is deterministic and follows what training computes", "[pretrain_config]") {
  const std::string small = config_path("small");
  const PretrainConfig a = read_pretrain_config(small, {});
  const uint64_t h = config_hash(a);
  CHECK(config_hash(read_pretrain_config(small, {})) == h);
  // Keys that change the computation change the hash...
  CHECK(config_hash(read_pretrain_config(small, {"optimizer.lr=5.0000001e-4"})) != h);
  CHECK(config_hash(read_pretrain_config(small, {"train.seed=2"})) != h);
  CHECK(config_hash(read_pretrain_config(small, {"model.generator_multiplier=0.5"})) != h);
  CHECK(config_hash(read_pretrain_config(small, {"data.vocab=other.txt"})) != h);
  // ...bookkeeping does not, nor does writing a default explicitly.
  CHECK(config_hash(read_pretrain_config(small, {"logging.every=7"})) == h);
  CHECK(config_hash(read_pretrain_config(small, {"checkpoint.dir=elsewhere"})) == h);
  CHECK(config_hash(read_pretrain_config(small, {"distributed.bucket_mb=4"})) == h);
  CHECK(config_hash(read_pretrain_config(small, {"train.micro_batch_size=128"})) == h);
  // The results are bit-identical at any thread count: a run may resume with another.
  const PretrainConfig threads = read_pretrain_config(small, {"train.threads=3"});
  CHECK(threads.train.threads == 3);
  CHECK(config_hash(threads) == h);
  const std::string text = canonical_text(a);
  CHECK_THAT(text, Catch::Contains("optimizer.lr=0.00050000000000000001\n"));
  CHECK_THAT(text, Catch::Contains("train.batch_size=128\n"));
  CHECK_THAT(text, Catch::Contains("discriminator.hidden=256\n"));
}

TEST_CASE("describe gives the run's key facts", "[pretrain_config]") {
  const PretrainConfig c = read_pretrain_config(config_path("small"), {});
  const std::string d = describe(c, "CPU (no GPU)", Precision::F32, false);
  CHECK_THAT(d, Catch::Contains("12 layers, hidden 256, 4 heads, FFN 1024, embedding 128"));
  // What runs, beside what the config asked for (a CPU run is f32 whatever it says).
  CHECK_THAT(d, Catch::Contains("runs on: CPU (no GPU), precision f32 (config: device auto, "
                                "precision bf16)"));
  CHECK_THAT(d, Catch::Contains("generator hidden 64"));
  CHECK_THAT(d, Catch::Contains("1000000 steps of 128 x 128 tokens"));
  CHECK_THAT(d, Catch::Contains("adamw lr 0.0005 (linear, warm-up 10000)"));
  CHECK_THAT(d, Catch::Contains("FLOPs"));
}

TEST_CASE("train.cuda_graph: default true, a bool, stated by describe, outside the hash",
          "[pretrain_config]") {
  const std::string small = config_path("small");
  const PretrainConfig on = read_pretrain_config(small, {});
  CHECK(on.train.cuda_graph);
  const PretrainConfig off = read_pretrain_config(small, {"train.cuda_graph=false"});
  CHECK_FALSE(off.train.cuda_graph);
  CHECK(config_hash(on) == config_hash(off));  // the same kernels: the same results
  CHECK_THROWS_WITH(read_pretrain_config(small, {"train.cuda_graph=maybe"}),
                    Catch::Contains("train.cuda_graph"));
  CHECK_THAT(describe(on, "CPU", Precision::F32, false),
             Catch::Contains("updates: eager (train.cuda_graph has no effect on the CPU)"));
  CHECK_THAT(describe(on, "GPU", Precision::BF16, true),
             Catch::Contains("updates: replayed from CUDA graphs"));
  CHECK_THAT(describe(off, "GPU", Precision::BF16, true),
             Catch::Contains("updates: eager (train.cuda_graph: false)"));
}

TEST_CASE("train.overlap_generator: default true, a bool, reaches the pretrainer, outside the hash",
          "[pretrain_config]") {
  const std::string small = config_path("small");
  const PretrainConfig off = read_pretrain_config(small, {"train.overlap_generator=false"});
  CHECK_FALSE(off.train.overlap_generator);
  CHECK_FALSE(off.pretrainer_options(SpecialTokens{}).overlap_generator);
  const PretrainConfig on = read_pretrain_config(small, {});
  CHECK(on.train.overlap_generator);
  CHECK(TrainConfig{}.overlap_generator);  // a config without the key gets it too
  CHECK(on.pretrainer_options(SpecialTokens{}).overlap_generator);
  CHECK(config_hash(on) == config_hash(off));  // the same bits either way
  CHECK_THROWS_WITH(read_pretrain_config(small, {"train.overlap_generator=2"}),
                    Catch::Contains("train.overlap_generator"));
  CHECK_THAT(describe(on, "GPU", Precision::BF16, true),
             Catch::Contains("the generator's backward on a second stream beside the "
                             "discriminator's (train.overlap_generator)"));
  CHECK_THAT(describe(on, "CPU", Precision::F32, false),
             Catch::Contains("train.overlap_generator has no effect on the CPU"));
  CHECK_THAT(describe(off, "GPU", Precision::BF16, true), !Catch::Contains("overlap_generator"));
}

TEST_CASE("describe states the GPU kernel choices, and on the CPU only a choice it ignores",
          "[pretrain_config]") {
  const std::string small = config_path("small");
  const PretrainConfig plain = read_pretrain_config(small, {});
  const PretrainConfig chosen =
      read_pretrain_config(small, {"model.attention=unfused", "model.fused_layers=false"});
  CHECK(config_hash(plain) == config_hash(chosen));  // the CPU's bits either way
  CHECK_THAT(describe(plain, "GPU", Precision::BF16, true),
             Catch::Contains("kernels: attention auto (model.attention), the generator's fused "
                             "blocks where a layer is 64 wide (model.fused_layers)"));
  CHECK_THAT(describe(chosen, "GPU", Precision::BF16, true),
             Catch::Contains("kernels: attention unfused (model.attention), the generator's "
                             "blocks as separate ops (model.fused_layers)"));
  CHECK_THAT(describe(plain, "CPU", Precision::F32, false), !Catch::Contains("kernels:"));
  CHECK_THAT(describe(chosen, "CPU", Precision::F32, false),
             Catch::Contains("kernels: model.attention and model.fused_layers have no effect on "
                             "the CPU"));
}

TEST_CASE("set_ranks splits the global batch over the ranks", "[pretrain_config]") {
  // micro_batch_size 0: batch_size / ranks, no accumulation.
  PretrainConfig small = read_pretrain_config(config_path("small"), {});
  small.train.set_ranks(8);
  CHECK(small.train.micro_batch_size == 16);
  CHECK(small.train.accumulation_steps() == 8);
  CHECK(small.train.local_accumulation(8) == 1);
  PretrainConfig odd = read_pretrain_config(config_path("small"), {});
  CHECK_THROWS_WITH(odd.train.set_ranks(3),
                    Catch::Contains("train.batch_size 128 cannot be split over 3 ranks"));

  // An explicit micro-batch: the global batch is kept by the local accumulation.
  TempConfig file(kMinimal);  // batch 32, micro-batch 8
  PretrainConfig two = read_pretrain_config(file.path, {});
  two.train.set_ranks(2);
  CHECK(two.train.micro_batch_size == 8);
  CHECK(two.train.accumulation_steps() == 4);
  CHECK(two.train.local_accumulation(2) == 2);
  PretrainConfig three = read_pretrain_config(file.path, {});
  CHECK_THROWS_WITH(three.train.set_ranks(3),
                    Catch::Contains("train.batch_size 32 is not a multiple of "
                                    "train.micro_batch_size 8 x 3 ranks"));
  PretrainConfig one = read_pretrain_config(file.path, {});
  one.train.set_ranks(1);
  CHECK(one.train.local_accumulation(1) == 4);
}

TEST_CASE("objective and masking-rate schedule keys", "[pretrain_config]") {
  const std::string small = config_path("small");
  const PretrainConfig plain = read_pretrain_config(small, {});
  CHECK(plain.objective == Objective::kElectra);
  CHECK_FALSE(plain.masking.linear_schedule);
  CHECK(plain.masking.mask_prob_at(500, 1000) == 0.15f);
  const PretrainConfig mlm = read_pretrain_config(small, {"objective=mlm"});
  CHECK(mlm.objective == Objective::kMlm);
  CHECK(describe(mlm, "cpu", Precision::F32, false).find("BERT corruption") != std::string::npos);
  CHECK_THROWS_WITH(read_pretrain_config(small, {"objective=bert"}),
                    Catch::Contains("objective: 'bert' is not one of"));
  const PretrainConfig linear = read_pretrain_config(
      small,
      {"masking.mask_prob_schedule=linear", "masking.mask_prob=0.3", "masking.mask_prob_end=0.15"});
  CHECK(linear.masking.linear_schedule);
  CHECK(linear.masking.max_mask_prob() == 0.3);
  CHECK(linear.masking.mask_prob_at(0, 101) == 0.3f);
  CHECK(linear.masking.mask_prob_at(50, 101) == Approx(0.225));
  CHECK(linear.masking.mask_prob_at(100, 101) == Approx(0.15));
  CHECK_THROWS_WITH(read_pretrain_config(small, {"masking.mask_prob_end=1"}),
                    Catch::Contains("masking.mask_prob_end must be in (0, 1)"));
  CHECK_THROWS_WITH(read_pretrain_config(small, {"masking.mask_prob_schedule=cosine"}),
                    Catch::Contains("is not one of: constant, linear"));
  // The default objective and schedule leave the hash of earlier runs unchanged; others change it.
  CHECK(canonical_text(plain).find("objective") == std::string::npos);
  CHECK(canonical_text(plain).find("mask_prob_end") == std::string::npos);
  CHECK(config_hash(mlm) != config_hash(plain));
  CHECK(config_hash(linear) != config_hash(read_pretrain_config(small, {"masking.mask_prob=0.3"})));
}

TEST_CASE("generator key", "[pretrain_config]") {
  const std::string small = config_path("small");
  const PretrainConfig plain = read_pretrain_config(small, {});
  CHECK(plain.generator == GeneratorKind::kMlm);
  const PretrainConfig unigram = read_pretrain_config(small, {"generator=unigram"});
  CHECK(unigram.generator == GeneratorKind::kUnigram);
  CHECK(describe(unigram, "cpu", Precision::F32, false).find("generator: unigram") !=
        std::string::npos);
  CHECK_THROWS_WITH(read_pretrain_config(small, {"generator=gan"}),
                    Catch::Contains("generator: 'gan' is not one of"));
  CHECK_THROWS_WITH(read_pretrain_config(small, {"generator=unigram", "objective=mlm"}),
                    Catch::Contains("generator: unigram needs an objective with replacements"));
  // The default leaves the hash of earlier runs unchanged; unigram changes it.
  CHECK(canonical_text(plain).find("generator=") == std::string::npos);
  CHECK(config_hash(unigram) != config_hash(plain));
}

TEST_CASE("sharing key", "[pretrain_config]") {
  const std::string small = config_path("small");
  const PretrainConfig plain = read_pretrain_config(small, {});
  CHECK(plain.sharing == Sharing::kEmbeddings);
  const PretrainConfig none = read_pretrain_config(small, {"sharing=none"});
  CHECK(none.sharing == Sharing::kNone);
  CHECK(describe(none, "cpu", Precision::F32, false).find("sharing: none") != std::string::npos);
  CHECK_THROWS_WITH(read_pretrain_config(small, {"sharing=some"}),
                    Catch::Contains("sharing: 'some' is not one of"));
  CHECK(canonical_text(plain).find("sharing=") == std::string::npos);
  CHECK(config_hash(none) != config_hash(plain));
  // all: the generator must be the discriminator's size, named by key with both sizes.
  CHECK_THROWS_WITH(read_pretrain_config(small, {"sharing=all"}),
                    Catch::Contains("sharing: all needs a generator of the discriminator's size: "
                                    "model.generator_multiplier 0.25 gives the generator hidden "
                                    "size 64, the discriminator's is 256"));
  const PretrainConfig all =
      read_pretrain_config(small, {"sharing=all", "model.generator_multiplier=1"});
  CHECK(all.sharing == Sharing::kAll);
  CHECK(
      describe(all, "cpu", Precision::F32, false).find("sharing: all (every encoder weight tied") !=
      std::string::npos);
  const PretrainConfig gdes = read_pretrain_config(small, {"sharing=gdes"});
  CHECK(gdes.sharing == Sharing::kGdes);
  CHECK(describe(gdes, "cpu", Precision::F32, false).find("sharing: gdes (the discriminator's") !=
        std::string::npos);
  CHECK(canonical_text(gdes).find("sharing=gdes") != std::string::npos);
  CHECK(config_hash(gdes) != config_hash(none));
  // Both need a generator model.
  CHECK_THROWS_WITH(read_pretrain_config(small, {"sharing=gdes", "objective=mlm"}),
                    Catch::Contains("sharing: gdes ties the generator to the discriminator, but "
                                    "objective: mlm has no generator"));
  CHECK_THROWS_WITH(read_pretrain_config(small, {"sharing=gdes", "generator=unigram"}),
                    Catch::Contains("generator: unigram builds no generator model"));
}

TEST_CASE("generator_training key", "[pretrain_config]") {
  const std::string small = config_path("small");
  const PretrainConfig plain = read_pretrain_config(small, {});
  CHECK(plain.generator_training == GeneratorTraining::kMle);
  const PretrainConfig adversarial =
      read_pretrain_config(small, {"generator_training=adversarial"});
  CHECK(adversarial.generator_training == GeneratorTraining::kAdversarial);
  CHECK(describe(adversarial, "cpu", Precision::F32, false)
            .find("generator_training: adversarial (REINFORCE") != std::string::npos);
  CHECK(read_pretrain_config(small, {"generator_training=adversarial", "objective=electra-15"})
            .generator_training == GeneratorTraining::kAdversarial);
  CHECK_THROWS_WITH(read_pretrain_config(small, {"generator_training=gan"}),
                    Catch::Contains("generator_training: 'gan' is not one of"));
  for (const char* objective : {"objective=mlm", "objective=replace-mlm",
                                "objective=all-tokens-mlm", "generator=unigram"}) {
    INFO(objective);
    CHECK_THROWS_WITH(
        read_pretrain_config(small, {"generator_training=adversarial", objective}),
        Catch::Contains("generator_training: adversarial needs the MLM generator and the binary "
                        "discriminator"));
  }
  CHECK_THROWS_WITH(
      read_pretrain_config(small, {"generator_training=adversarial", "masking.temperature=0.5"}),
      Catch::Contains("masking.temperature 0.5 with generator_training: adversarial"));
  // The default leaves the hash of earlier runs unchanged; adversarial changes it.
  CHECK(canonical_text(plain).find("generator_training") == std::string::npos);
  CHECK(config_hash(adversarial) != config_hash(plain));
}

TEST_CASE("training: two-stage and its errors", "[pretrain_config]") {
  const PretrainConfig plain = read_pretrain_config(config_path("small"), {});
  CHECK(plain.training == Training::kJoint);
  CHECK(canonical_text(plain).find("training=") == std::string::npos);
  // The tiny preset with multiplier 1 has a generator of the discriminator's size (hidden 128,
  // 2 heads = 128 / 64, FFN 512 = 4 x 128); with 0.5 it has not.
  auto read = [](const std::string& extra, const char* multiplier = "1") {
    TempConfig file(str_cat("model:\n  preset: tiny\n  generator_multiplier: ", multiplier,
                            "\ndata:\n  shards: s\n  vocab: v.txt\ntrain:\n  steps: 100\n"
                            "  seq_len: 64\n",
                            extra));
    return read_pretrain_config(file.path, {});
  };
  const std::string two = "training: two-stage\ntwo_stage:\n  generator_steps: 40\n";
  const PretrainConfig staged = read(two);
  CHECK(staged.training == Training::kTwoStage);
  CHECK(staged.generator_steps == 40);
  CHECK(describe(staged, "cpu", Precision::F32, false).find("training: two-stage (updates 1-40") !=
        std::string::npos);
  CHECK(canonical_text(staged).find("training=two-stage\ntwo_stage.generator_steps=40") !=
        std::string::npos);
  CHECK(config_hash(staged) != config_hash(read("")));
  CHECK(read("training: joint\n").training == Training::kJoint);
  CHECK_NOTHROW(read(two + "objective: electra-15\n"));

  CHECK_THROWS_WITH(read("training: two-stage\n"),
                    Catch::Contains("missing required key 'two_stage.generator_steps'"));
  CHECK_THROWS_WITH(read("training: two-stage\ntwo_stage:\n  generator_steps: 0\n"),
                    Catch::Contains("two_stage.generator_steps must be in (0, train.steps = 100)"));
  CHECK_THROWS_WITH(read("training: two-stage\ntwo_stage:\n  generator_steps: 100\n"),
                    Catch::Contains("two_stage.generator_steps must be in (0, train.steps = 100)"));
  // With joint the key is unused (the shipped configs spell it), outside the hash, and said so.
  const PretrainConfig joint = read("two_stage:\n  generator_steps: 10\n");
  CHECK(joint.training == Training::kJoint);
  CHECK(describe(joint, "cpu", Precision::F32, false)
            .find("training: joint (generator and discriminator trained together; "
                  "two_stage.generator_steps unused)") != std::string::npos);
  CHECK(config_hash(joint) == config_hash(read("")));
  CHECK_THROWS_WITH(read("training: staged\n"),
                    Catch::Contains("training: 'staged' is not one of"));
  CHECK_THROWS_WITH(read(two + "objective: mlm\n"),
                    Catch::Contains("training: two-stage needs a trained MLM generator"));
  CHECK_THROWS_WITH(read(two + "objective: replace-mlm\n"),
                    Catch::Contains("got objective replace-mlm"));
  CHECK_THROWS_WITH(read(two + "generator: unigram\n"),
                    Catch::Contains("got objective electra, generator unigram"));
  CHECK_THROWS_WITH(read(two, "0.5"),
                    Catch::Contains("generator hidden 64, 2 layers, 1 heads, FFN 256, embedding "
                                    "64; discriminator hidden 128, 2 layers, 2 heads, FFN 512, "
                                    "embedding 64"));
  // Stage 1 is maximum likelihood and stage 2 freezes the generator; all has no second encoder
  // and gdes's residuals would train in stage 2 only: each combination is one error line.
  CHECK_THROWS_WITH(read(two + "generator_training: adversarial\n"),
                    Catch::Contains("generator_training: adversarial does not apply"));
  CHECK_THROWS_WITH(read(two + "sharing: all\n"),
                    Catch::Contains("two-stage needs sharing: embeddings or none (got all"));
  CHECK_THROWS_WITH(read(two + "sharing: gdes\n"),
                    Catch::Contains("two-stage needs sharing: embeddings or none (got gdes"));
  CHECK_NOTHROW(read(two + "sharing: none\n"));
}
