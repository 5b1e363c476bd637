#include "data/data_builder.h"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "data/basic_tokenizer.h"
#include "data/example_builder.h"
#include "data/shard.h"
#include "data/shard_manifest.h"
#include "data/text_reader.h"
#include "data/tokenizer.h"
#include "engine/error.h"
#include "engine/timer.h"

namespace electra::data {
namespace fs = std::filesystem;

namespace {

// Whole documents, as read: line i is text[line_ends[i-1], line_ends[i]); document j is lines
// [doc_ends[j-1], doc_ends[j]).
struct Chunk {
  uint64_t seq = 0;
  uint64_t first_doc = 0;
  std::string text;
  std::vector<uint32_t> line_ends;
  std::vector<uint32_t> doc_ends;
};

struct ChunkResult {
  std::vector<uint16_t> records;
  std::vector<uint32_t> doc_examples;  // examples of each document of the chunk
  uint64_t invalid_utf8 = 0;
};

// Work queue in, results out (by sequence number), with a bound on chunks in flight.
class Pipeline {
 public:
  Pipeline(const Vocab& vocab, const BuildDataOptions& options, unsigned threads)
      : max_in_flight_(2 * threads + 2) {
    for (unsigned t = 0; t < threads; ++t) {
      workers_.emplace_back([this, &vocab, &options] { work(vocab, options); });
    }
  }
  ~Pipeline() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closing_ = true;
    }
    work_cv_.notify_all();
    for (auto& w : workers_) w.join();
  }

  bool full() {
    std::lock_guard<std::mutex> lock(mu_);
    return submitted_ - taken_ >= max_in_flight_;
  }
  void submit(Chunk chunk) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      chunk.seq = submitted_++;
      queue_.push_back(std::move(chunk));
    }
    work_cv_.notify_one();
  }
  // The result of the next chunk in order; waits for it. Rethrows a worker's exception.
  ChunkResult take() {
    std::unique_lock<std::mutex> lock(mu_);
    ELECTRA_CHECK(taken_ < submitted_, "Pipeline::take with nothing submitted");
    done_cv_.wait(lock, [&] { return error_ || done_.count(taken_) > 0; });
    if (error_) std::rethrow_exception(error_);
    auto node = done_.extract(taken_++);
    return std::move(node.mapped());
  }
  bool pending() {
    std::lock_guard<std::mutex> lock(mu_);
    return taken_ < submitted_;
  }

 private:
  void work(const Vocab& vocab, const BuildDataOptions& options) {
    Tokenizer tokenizer(vocab, options.lowercase);
    ExampleBuilder builder(vocab, options.seq_len, options.seed);
    DocumentTokens doc;
    while (true) {
      Chunk chunk;
      {
        std::unique_lock<std::mutex> lock(mu_);
        work_cv_.wait(lock, [&] { return closing_ || !queue_.empty(); });
        if (queue_.empty()) return;
        chunk = std::move(queue_.front());
        queue_.pop_front();
      }
      ChunkResult result;
      try {
        const uint64_t invalid_before = tokenizer.invalid_utf8();
        size_t line = 0;
        for (size_t d = 0; d < chunk.doc_ends.size(); ++d) {
          doc.clear();
          for (; line < chunk.doc_ends[d]; ++line) {
            const uint32_t begin = line == 0 ? 0 : chunk.line_ends[line - 1];
            tokenizer.encode(
                std::string_view(chunk.text).substr(begin, chunk.line_ends[line] - begin),
                doc.tokens);
            doc.ends.push_back(static_cast<uint32_t>(doc.tokens.size()));
          }
          result.doc_examples.push_back(
              static_cast<uint32_t>(builder.build(doc, chunk.first_doc + d, result.records)));
        }
        result.invalid_utf8 = tokenizer.invalid_utf8() - invalid_before;
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu_);
        error_ = std::current_exception();
        done_cv_.notify_all();
        return;
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        done_.emplace(chunk.seq, std::move(result));
      }
      done_cv_.notify_all();
    }
  }

  const uint64_t max_in_flight_;
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<Chunk> queue_;
  std::map<uint64_t, ChunkResult> done_;
  uint64_t submitted_ = 0, taken_ = 0;
  bool closing_ = false;
  std::exception_ptr error_;
  std::vector<std::thread> workers_;
};

// Writes results in order, starting a new shard at every docs_per_shard boundary.
class ShardSink {
 public:
  ShardSink(const Vocab& vocab, const BuildDataOptions& options, BuildDataReport& report)
      : options_(options), report_(report) {
    header_.seq_len = options.seq_len;
    header_.vocab_size = static_cast<uint32_t>(vocab.size());
    header_.vocab_hash = vocab.hash();
    header_.pad_id = static_cast<uint16_t>(vocab.pad_id());
    header_.cls_id = static_cast<uint16_t>(vocab.cls_id());
    header_.sep_id = static_cast<uint16_t>(vocab.sep_id());
    header_.mask_id = static_cast<uint16_t>(vocab.mask_id());
  }

  void write(const ChunkResult& result) {
    const size_t seq_len = options_.seq_len;
    size_t offset = 0;
    for (uint32_t count : result.doc_examples) {
      const uint64_t shard = next_doc_ / options_.docs_per_shard;
      ++next_doc_;
      if (count == 0) continue;
      if (!writer_ || shard != shard_) {
        finish();
        shard_ = shard;
        char name[32];
        std::snprintf(name, sizeof name, "shard-%05zu.bin", report_.shards.size());
        writer_ =
            std::make_unique<ShardWriter>((fs::path(options_.output_dir) / name).string(), header_);
      }
      writer_->add({result.records.data() + offset, count * seq_len});
      offset += count * seq_len;
      report_.examples += count;
    }
    report_.invalid_utf8 += result.invalid_utf8;
  }

  void finish() {
    if (!writer_) return;
    writer_->finish();
    report_.shards.push_back(writer_->path());
    manifest_.push_back(
        {fs::path(writer_->path()).filename().string(),
         kShardHeaderBytes + writer_->example_count() * options_.seq_len * sizeof(uint16_t),
         writer_->example_count(), writer_->payload_checksum()});
    writer_.reset();
  }

  // After the last shard: the manifest marks the directory complete.
  void write_manifest() const { write_shard_manifest(options_.output_dir, manifest_); }

 private:
  const BuildDataOptions& options_;
  BuildDataReport& report_;
  ShardHeader header_;
  std::unique_ptr<ShardWriter> writer_;
  std::vector<ManifestEntry> manifest_;
  uint64_t shard_ = 0;
  uint64_t next_doc_ = 0;
};

void prepare_output_dir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  ELECTRA_USER_CHECK(!ec && fs::is_directory(dir), "cannot create output directory '", dir, "'",
                     ec ? ": " + ec.message() : std::string());
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    ELECTRA_USER_CHECK(
        !(name.starts_with("shard-") && name.ends_with(".bin")) && name != kShardManifest,
        "output directory '", dir, "' already contains shards (", name,
        "); remove them or choose another directory");
  }
}

std::string format_seconds(double s) {
  const auto total = static_cast<long long>(s + 0.5);
  char buf[32];
  if (total >= 3600) {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", total / 3600, total / 60 % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", total / 60, total % 60);
  }
  return buf;
}

}  // namespace

BuildDataReport build_pretraining_data(const Vocab& vocab, const BuildDataOptions& options) {
  ELECTRA_USER_CHECK(options.docs_per_shard > 0, "--docs-per-shard must be > 0");
  // Its constructor checks seq_len and the vocabulary size: fail before touching any file.
  const ExampleBuilder validate_options(vocab, options.seq_len, options.seed);
  const std::vector<std::string> files = expand_text_inputs(options.inputs);
  prepare_output_dir(options.output_dir);
  const unsigned threads =
      options.threads > 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  ELECTRA_USER_CHECK(threads <= kMaxBuildThreads, "--threads ", threads, " exceeds ",
                     kMaxBuildThreads);

  BuildDataReport report;
  report.files = files.size();
  const uint64_t total_bytes = std::max<uint64_t>(1, total_file_bytes(files));
  uint64_t done_file_bytes = 0;
  Stopwatch clock;
  double last_progress = 0;

  ShardSink sink(vocab, options, report);
  Pipeline pipeline(vocab, options, threads);
  Chunk chunk;
  bool in_doc = false;

  const auto end_doc = [&] {
    if (!in_doc) return;
    chunk.doc_ends.push_back(static_cast<uint32_t>(chunk.line_ends.size()));
    ++report.documents;
    in_doc = false;
  };
  const auto flush = [&](bool force) {
    if (chunk.doc_ends.empty() || (!force && chunk.text.size() < options.chunk_bytes)) return;
    while (pipeline.full()) sink.write(pipeline.take());
    const uint64_t next_first = report.documents;
    pipeline.submit(std::move(chunk));
    chunk = Chunk{};
    chunk.first_doc = next_first;
  };
  const auto progress = [&](const LineReader& reader) {
    const double now = clock.seconds();
    if (!options.progress || now - last_progress < 2.0) return;
    last_progress = now;
    const double frac =
        static_cast<double>(done_file_bytes + reader.file_bytes_read()) / total_bytes;
    const double text_mb = static_cast<double>(report.text_bytes + reader.text_bytes_read()) / 1e6;
    std::fprintf(stderr,
                 "build-data: %5.1f%% of input, %.1f MB of text at %.1f MB/s, %llu documents, "
                 "%llu examples written, ETA %s\n",
                 100.0 * frac, text_mb, text_mb / now,
                 static_cast<unsigned long long>(report.documents),
                 static_cast<unsigned long long>(report.examples),
                 format_seconds(frac > 0 ? now * (1 - frac) / frac : 0).c_str());
  };

  for (const auto& file : files) {
    LineReader reader(file);
    std::string_view line;
    while (reader.next(line)) {
      if (is_blank_line(line)) {
        end_doc();
        flush(false);
        continue;
      }
      // A document longer than a chunk is split only between documents, never inside one, so
      // chunk offsets (uint32) bound a document to 4 GB of text.
      ELECTRA_USER_CHECK(chunk.text.size() + line.size() < UINT32_MAX, "document ending in '", file,
                         "' exceeds 4 GB without a blank line");
      chunk.text.append(line);
      chunk.line_ends.push_back(static_cast<uint32_t>(chunk.text.size()));
      in_doc = true;
      progress(reader);
    }
    end_doc();  // a file's end ends its last document
    report.text_bytes += reader.text_bytes_read();
    done_file_bytes += reader.file_bytes_read();
  }
  flush(true);
  while (pipeline.pending()) sink.write(pipeline.take());
  sink.finish();
  ELECTRA_USER_CHECK(report.examples > 0, options.inputs.front(),
                     options.inputs.size() > 1 ? " (and the other inputs)" : "",
                     ": no examples: ", report.documents, " documents, ", report.text_bytes,
                     " bytes of text (is the corpus empty?); no shard written to ",
                     options.output_dir);
  sink.write_manifest();
  report.seconds = clock.seconds();
  return report;
}

}  // namespace electra::data
