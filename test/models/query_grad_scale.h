// The scale of the rounding error in an encoder's query gradients, read off the CPU reference's
// attention backward by an op observer (pretrainer_gpu_test, check_tied_grads).
//
// dQ = dS K / sqrt(d), and every row of dS sums to 0 (dS_ij = P_ij (dP_ij - sum_k P_ik dP_ik)),
// so dQ does not change when one vector is added to every key, but its rounding error does: a
// device that rounds dS and K to bf16 moves dQ_ic by up to about u sum_j |dS_ij K_jc| / sqrt(d),
// which may be many times |dQ_ic| where the keys' common part cancels. The query bias gradient
// sum_i dQ_ic and the weight gradient sum_i dQ_ic X_im (X: the layer's input) sum these terms
// once more, so their errors scale with
//   bias:   max_c       sum_i sum_j |dS_ij K_jc| / sqrt(d)
//   weight: max_(c, m)  sum_i (sum_j |dS_ij K_jc|) |X_im| / sqrt(d)
// (i over every sequence's rows), not with their own largest value. The observer computes both
// from the CPU's dS (the attention backward leaves it in its scratch: attention_cpu.cpp), its K
// (the qkv it read) and X (the input of the weight-gradient GEMM that reads its dqkv).
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "engine/op_observer.h"
#include "kernels/attention.h"
#include "kernels/matmul.h"

namespace electra::test {

class QueryGradScale final : public OpObserver {
 public:
  explicit QueryGradScale(int layers) : layers_(layers), bias_(layers), weight_(layers) {}

  // The scale of parameter `name` (".layer.L.attention.self.query.bias" or ".weight"), or 0 when
  // it is no query parameter or the observer saw none of its terms.
  double scale_of(const std::string& name) const {
    const size_t at = name.find("layer.");
    const bool bias = name.ends_with("attention.self.query.bias");
    if (at == std::string::npos || !(bias || name.ends_with("attention.self.query.weight"))) {
      return 0;
    }
    const int layer = std::stoi(name.substr(at + 6));
    const std::vector<double>& sums = bias ? bias_.at(layer) : weight_.at(layer);
    return sums.empty() ? 0 : *std::max_element(sums.begin(), sums.end());
  }

  bool before(Context&, const OpCall&) override { return true; }
  void after(Context& ctx, const OpCall& call) override {
    if (ctx.is_cuda()) return;
    if (const auto* op = op_of<AttentionBackward>(call)) attention(*op);
    if (const auto* op = op_of<Gemm>(call)) gemm(*op);
  }
  void memset(size_t) override {}

 private:
  // sum_j |dS_ij K_jc| / sqrt(d) of one attention backward's rows i and query columns c.
  struct Terms {
    int layer = 0;
    int64_t rows = 0, h = 0;
    std::vector<double> abs;  // [rows, h]
  };

  void attention(const AttentionBackward& op) {
    ELECTRA_CHECK(op.qkv.dtype == DType::F32, "QueryGradScale: an f32 CPU reference");
    const int64_t b = op.qkv.dim(0), t = op.qkv.dim(1), h = op.qkv.dim(2) / 3;
    const int64_t heads = op.args.heads, d = h / heads;
    const float* qkv = op.qkv.ptr<float>();
    const float* ds = op.scratch.ptr<float>();  // [B, heads, T, T]
    Terms terms{layers_ - 1 - calls_++ % layers_, b * t, h, std::vector<double>(b * t * h)};
    for (int64_t bi = 0; bi < b; ++bi) {
      for (int64_t c = 0; c < h; ++c) {
        for (int64_t i = 0; i < t; ++i) {
          const float* ds_row = ds + ((bi * heads + c / d) * t + i) * t;
          double sum = 0;
          for (int64_t j = 0; j < t; ++j) {
            sum += std::abs(ds_row[j] * qkv[(bi * t + j) * 3 * h + h + c]);
          }
          terms.abs[(bi * t + i) * h + c] = sum / std::sqrt(static_cast<double>(d));
        }
      }
    }
    std::vector<double>& bias = bias_[terms.layer];
    bias.resize(h);
    for (int64_t r = 0; r < terms.rows; ++r) {
      for (int64_t c = 0; c < h; ++c) bias[c] += terms.abs[r * h + c];
    }
    pending_[op.dqkv.data] = std::move(terms);
  }

  // dW += dqkv^T X: where A is a dqkv the attention backward wrote, its query rows' terms times
  // |X| (one matrix or a layer group's batch).
  void gemm(const Gemm& g) {
    if (!g.trans_a || g.trans_b || g.a.storage.dtype != DType::F32) return;
    for (int64_t mi = 0; mi < g.batch; ++mi) {
      const auto it = pending_.find(g.a.storage.ptr<float>() + g.a.offset + mi * g.a.stride);
      if (it == pending_.end()) continue;
      const Terms& terms = it->second;
      ELECTRA_CHECK(g.a.rows == terms.rows && g.a.ld == 3 * terms.h,
                    "QueryGradScale: a GEMM reads a dqkv as ", g.a.rows, " x ", g.a.ld);
      const float* x = g.b.storage.ptr<float>() + g.b.offset + mi * g.b.stride;
      const int64_t in = g.b.cols;
      std::vector<double>& weight = weight_[terms.layer];
      weight.resize(terms.h * in);
      for (int64_t r = 0; r < terms.rows; ++r) {
        for (int64_t c = 0; c < terms.h; ++c) {
          for (int64_t m = 0; m < in; ++m) {
            weight[c * in + m] += terms.abs[r * terms.h + c] * std::abs(x[r * g.b.ld + m]);
          }
        }
      }
    }
  }

  int layers_;
  int calls_ = 0;                            // the backward runs the last layer first
  std::vector<std::vector<double>> bias_;    // per layer: [H]
  std::vector<std::vector<double>> weight_;  // per layer: [H, in]
  std::map<const void*, Terms> pending_;     // by the dqkv each attention backward wrote
};

}  // namespace electra::test
