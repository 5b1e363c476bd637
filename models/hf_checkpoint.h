// Checkpoints in HF transformers' layout: a model directory holds
// model.safetensors (F32, metadata {"format": "pt"}) and config.json, exactly as
// ElectraForPreTraining (discriminator) / ElectraForMaskedLM (generator) save_pretrained() writes
// them, so `from_pretrained` loads our checkpoints and HF ELECTRA checkpoints load into the engine.
//
// Names: the store holds "<model>/<HF name>" (models/pretrainer.h); a checkpoint holds the HF
// name. The shared embedding tables exist once, as "discriminator/electra.embeddings.*", and appear
// in BOTH directories (HF's generator owns a copy). HF's generator_lm_head.weight is tied to the
// word table and is not written (HF re-ties it on load). By `sharing:` (models/objective.h):
// none: the generator's own tables are "generator/electra.embeddings.*"; all: the generator has
// its head only and its directory holds the discriminator's encoder ("discriminator/electra.*")
// as its own; gdes: the discriminator's directory holds E_G + E_delta as its word, position and
// segment tables (HfModelLayout::sums), a plain ElectraForPreTraining.
//
// Loading validates everything first (config.json keys and every tensor's presence, shape and
// dtype) and throws UserError naming the file and the key or tensor; only then does it write into
// the store, so a refused checkpoint leaves the model untouched. Known extra tensors are ignored:
// "electra.embeddings.position_ids" (a buffer older HF versions saved) and
// "generator_lm_head.weight" (the tied copy); any other tensor the model lacks is an error.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "engine/context.h"
#include "engine/parameter_store.h"
#include "models/electra_config.h"

namespace electra {

class ElectraPretrainer;

// Which store tensors form one HF model directory.
struct HfModelLayout {
  std::string architecture;  // "ElectraForPreTraining" / "ElectraForMaskedLM"
  EncoderConfig config;      // written to / checked against config.json
  std::vector<std::pair<std::string, std::string>> tensors;  // (checkpoint name, store name)
  // sharing: gdes: checkpoint tensors that are the sum of two store tensors, the discriminator's
  // tables E_D = E_G + E_delta (models/embeddings.h). Saved as base + residual (one rounding in the
  // store's dtype: the bits the discriminator read); loaded as residual = file - base, the base
  // being loaded first (load_pretrainer_models then restores the exact residual).
  struct Sum {
    std::string name;      // in the checkpoint
    std::string residual;  // store name of E_delta
    std::string base;      // store name of E_G
  };
  std::vector<Sum> sums;
  // Checkpoint tensors under these prefixes are accepted and not loaded (fine-tuning from a
  // pre-training checkpoint skips its "discriminator_predictions." head).
  std::vector<std::string> ignored_prefixes;
  // Model tensors under these prefixes may be absent from the checkpoint; they then keep their
  // values (an adversarial run initialised from an mle generator keeps its fresh baseline).
  std::vector<std::string> optional_prefixes;
  // Sequence classification checkpoints (ElectraForSequenceClassification): num_labels > 0
  // writes id2label / label2id, and problem_type ("regression" for STS-B) when not empty.
  int num_labels = 0;
  std::string problem_type;
  // Written to config.json as "electra_engine_note" when not empty: what an HF class would miss
  // in this checkpoint (its architecture is then not an HF class name).
  std::string note;
};

// One tensor of a checkpoint on the host, in f32: what save_hf_tensors writes.
struct HostTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

// Every "discriminator/..." tensor of the store: an ElectraForPreTraining, or with the MLM
// objectives' head an ElectraForMaskedLM (all-tokens-mlm, with both heads, notes it).
HfModelLayout discriminator_layout(const ParameterStore& store, const EncoderConfig& config);
// Whether the store has a generator (every objective but mlm).
bool has_generator(const ParameterStore& store);
// The generator's own "generator/..." tensors, plus what it shares mapped to the
// discriminator's: electra.embeddings.* (sharing: embeddings), electra.* (all) or nothing (its
// own tables: none, gdes).
HfModelLayout generator_layout(const ParameterStore& store, const EncoderConfig& generator_config);

// Writes dir/model.safetensors and dir/config.json (each atomically); creates dir. The store may
// be f32 or f64 (gradient checks), on any device; the file is F32.
void save_hf_model(Context& ctx, const ParameterStore& store, const HfModelLayout& layout,
                   const std::string& dir);
// save_hf_model in two halves, for a caller that rewrites tensors on the way (the fine-tuning
// head): the layout's tensors copied to the host in f32, and the writing of given tensors with the
// layout's config.json.
std::vector<HostTensor> hf_host_tensors(Context& ctx, const ParameterStore& store,
                                        const HfModelLayout& layout);
void save_hf_tensors(const std::vector<HostTensor>& tensors, const HfModelLayout& layout,
                     const std::string& dir);
// Copies host values into a store parameter (f32 or f64 store, any device).
void load_host_values(Context& ctx, const ParameterStore& store, const std::string& store_name,
                      const std::vector<float>& values);
// Validates dir/config.json (model_type "electra", hidden_act "gelu", sizes equal to
// layout.config) and dir/model.safetensors (every layout tensor present with its shape and a
// floating dtype, nothing unexpected), then copies the tensors into the store. With a bf16
// compute copy, the caller refreshes it afterwards (ModelWeights::refresh_compute).
void load_hf_model(Context& ctx, const ParameterStore& store, const HfModelLayout& layout,
                   const std::string& dir);

// The encoder sizes of an HF ELECTRA config.json (for building a model around an HF checkpoint).
// UserError naming the file and key when a size is missing or not a positive integer, or when
// model_type / hidden_act / position_embedding_type are not what the engine implements.
EncoderConfig read_hf_config(const std::string& config_json_path);
// The first entry of config.json's "architectures" ("ElectraForPreTraining", ...), or "" when the
// key is absent or empty. UserError when the file is missing or not a JSON object.
std::string read_hf_architecture(const std::string& config_json_path);

// A pre-training checkpoint's model part: <dir>/discriminator and <dir>/generator (no generator
// for the mlm objective).
void save_pretrainer_models(Context& ctx, const ElectraPretrainer& pretrainer,
                            const std::string& dir);
// Validates both directories (and that their copies of the shared tensors are equal) before
// writing anything; then loads both and refreshes the compute copy of the weights. With
// sharing: gdes the residuals are file - E_G, equal to the saved ones up to one rounding: a
// resume then overwrites them with their exact values (apps/trainer_checkpoint.h).
void load_pretrainer_models(Context& ctx, ElectraPretrainer& pretrainer, const std::string& dir);

// A shared tensor (HF name "electra.embeddings.*", or any "electra.*" with sharing: all) whose
// copy in the generator's directory differs from the discriminator's, and the largest absolute
// difference.
struct SharedTableDifference {
  std::string name;
  double largest = 0;
};
// A discriminator (ElectraForPreTraining) and a generator (ElectraForMaskedLM) from two
// directories, as the released HF checkpoints come. Validates both before writing anything; the
// shared tables are taken from the discriminator's copy (they may differ when the two were not
// trained together: the differences are returned for the caller to report); then refreshes the
// compute copy of the weights. A generator directory without the adversarial baseline
// (generator_training: mle) leaves the model's baseline as it was.
std::vector<SharedTableDifference> load_pretrainer_pair(Context& ctx, ElectraPretrainer& pretrainer,
                                                        const std::string& discriminator_dir,
                                                        const std::string& generator_dir);

}  // namespace electra
