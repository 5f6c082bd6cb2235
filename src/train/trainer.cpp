// nanoGPT's training loop on our model, loaders, optimizer and checkpoints. Resume is bit-exact:
// dropout masks are a function of (seed, iteration, micro-step), evaluation uses its own loaders
// reset before each eval, and the checkpoint holds the train loader's state and the optimizer's.
#include "train/trainer.h"

#include <fmt/format.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/config.h"
#include "core/cpu_info.h"
#include "core/json_util.h"
#include "core/memory.h"
#include "core/rng.h"
#include "core/timer.h"
#include "data/dataset_files.h"
#include "data/loader.h"
#include "distributed/data_parallel.h"
#include "distributed/single_process_communicator.h"
#include "distributed/zero1.h"
#include "io/checkpoint.h"
#include "io/nanogpt_checkpoint.h"
#include "kernels/cpu_backend.h"
#include "kernels/dtype.h"
#include "kernels/kernel_planner.h"
#include "model/gpt.h"
#include "optim/grad_scaler.h"
#include "optim/lr_schedule.h"
#include "optim/optimizer.h"
#include "train/device_profile_peaks.h"
#include "train/full_eval.h"
#include "train/host_staging.h"
#include "train/metrics.h"
#include "train/model_source.h"
#include "train/nanogpt_run.h"
#include "train/optimizer_step.h"
#include "train/run_inputs.h"
#include "train/step_products.h"
#include "train/stop_request.h"
#include "train/time_to_target.h"
#include "train/train_state.h"
#include "train/weight_ema.h"

namespace nanogpt {

namespace fs = std::filesystem;

std::string checkpoint_dir_of(const std::string& out_dir) {
  return (fs::path(out_dir) / "ckpt").string();
}

namespace {

// The log's peaks beside fp32's: bf16 dot products and the 16-bit matmul where measured.
std::string other_peaks(const ComputePeaks& p) {
  std::string out;
  if (p.bf16_dot.flops_per_s > 0) {
    out += fmt::format(", {:.0f} GFLOP/s bf16 dot products", p.bf16_dot.flops_per_s / 1e9);
  }
  if (p.lowp_matmul.flops_per_s > 0) {
    out += fmt::format(", {:.0f} GFLOP/s {} matmul (oneDNN)", p.lowp_matmul.flops_per_s / 1e9,
                       dtype_name(p.dtype));
  }
  return out;
}

// Keeps the records of metrics.jsonl that come before `iter` (used when resuming, so the file reads
// as if the run had never stopped), and the full-validation evaluation at `iter` itself (time to
// target): it runs before the checkpoint at `iter` is saved, so it belongs to the state resumed.
void rewind_metrics(const std::string& path, int64_t iter) {
  std::ifstream in(path);
  if (!in.good()) return;
  std::vector<std::string> kept;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    try {
      auto j = nlohmann::json::parse(line);
      if (!j.contains("iter")) continue;
      const int64_t at = j["iter"].get<int64_t>();
      if (at < iter || (at == iter && j.contains("full_val_loss"))) kept.push_back(line);
    } catch (const std::exception&) {
      // a torn last line from a crash: dropped
    }
  }
  in.close();
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    for (const auto& l : kept) out << l << "\n";
  }
  fs::rename(tmp, path);
}

struct Batch {
  std::vector<int32_t> inputs, targets;  // (B, T)
  explicit Batch(int64_t n) : inputs(n), targets(n) {}
};

class TrainingRun {
 public:
  TrainingRun(TrainConfig config, const TrainOptions& options)
      : config_(std::move(config)), options_(options) {
    comm_ = options_.comm ? options_.comm : &single_process_;
    backend_ = options_.device ? options_.device : &ctx_;
    if (comm_->rank() != 0) options_.quiet = true;  // rank 0 alone logs
  }

  TrainResult run() {
    wall_ = Timer();
    setup();
    loop();
    result_.wall_seconds = wall_.seconds();
    result_.peak_tracked_bytes = tracker_.peak_bytes();
    result_.peak_rss_bytes = process_peak_rss_bytes();
    if (!step_ms_.empty()) {
      std::vector<double> sorted = step_ms_;
      std::sort(sorted.begin(), sorted.end());
      result_.median_step_ms = sorted[sorted.size() / 2];
    }
    if (target_.enabled()) say(target_.summary_line());
    say(fmt::format(
        "done: iteration {} ({} steps in this run, {}, median {} per step), best val loss {}, "
        "checkpoint {}, peak memory {} tracked / {} RSS",
        result_.iter_num, result_.steps_run, format_duration(result_.wall_seconds),
        step_ms_.empty() ? std::string("n/a") : fmt::format("{:.1f} ms", result_.median_step_ms),
        result_.last_val_loss < 0 ? std::string("n/a")
                                  : fmt::format("{:.4f}", result_.best_val_loss),
        result_.checkpoint_dir.empty() ? std::string("none") : result_.checkpoint_dir,
        format_bytes(result_.peak_tracked_bytes), format_bytes(result_.peak_rss_bytes)));
    if (config_.profile) print_profile();
    return result_;
  }

 private:
  void say(const std::string& line) {
    if (!options_.quiet) {
      std::fputs((line + "\n").c_str(), stdout);
      std::fflush(stdout);
    }
  }

  void setup() {
    // A config that did not come through the CLI may still say 'auto' (the CLI resolves it first).
    const std::string auto_note = config_.resolve_auto_dtype();
    if (!auto_note.empty()) say(auto_note);
    config_.validate();
    check_same_config(*comm_, config_to_json(config_));
    dp_ = std::make_unique<DataParallel>(
        *comm_, config_.gradient_accumulation_steps,
        static_cast<int64_t>(config_.bucket_cap_mb * 1e6 / sizeof(float)),
        /*all_reduce_gradients=*/config_.zero_stage == 0);
    if (config_.threads > 0 || comm_->size() > 1) {
      omp_set_num_threads(threads_per_rank(config_.threads, comm_->local_size()));
    }
    threads_ = omp_get_max_threads();
    data_dir_ = config_.resolved_data_dir();
    dataset_meta_ = read_dataset_meta(data_dir_);
    ckpt_dir_ = checkpoint_dir_of(config_.out_dir);

    const std::string& from = config_.init_from;
    if (!backend_->host_addressable()) {
      CHECK(comm_->size() == 1 || comm_->device_buffers(),
            "device '{}': {} ranks need a communicator of device memory (the gradients live "
            "there: NCCL, --device=cuda under mpirun, srun or torchrun), not {}",
            backend_->memory_name(), comm_->size(), comm_->describe());
    }
    // The model's shape: from the checkpoint / weights file when starting from one.
    Buffer<float> loaded_params;
    std::unique_ptr<NanoGptCheckpoint> nanogpt_ckpt;
    if (from == "resume") {
      ModelConfig saved = read_checkpoint_config(ckpt_dir_);
      saved.take_dropout_from(config_.model);  // like nanoGPT, dropout may change on resume
      check_resume_shape(saved);
      config_.model = saved;
    } else if (is_torch_checkpoint_file(from)) {
      // nanoGPT's ckpt.pt: weights, model_args, AdamW's state, iter_num (taken after the
      // optimizer exists); dropout stays as configured.
      nanogpt_ckpt = start_from_nanogpt(from, config_.model, loaded_params);
    } else if (from != "scratch") {
      // Weights file: the shape (and GELU form) come from it; dropout stays as configured.
      ModelSource src = load_model_source(from, config_.out_dir);
      const ModelConfig configured = config_.model;
      config_.model = src.config;
      config_.model.take_dropout_from(configured);
      loaded_params = std::move(src.params);
    }
    // The dataset's vocab size (meta.json), 0 if it does not say.
    const std::string meta_path = (fs::path(data_dir_) / "meta.json").string();
    const int data_vocab = dataset_meta_.is_object() && dataset_meta_.contains("vocab_size")
                               ? json_integer<int>(dataset_meta_, "vocab_size", meta_path, 1, 65536)
                               : 0;
    if (from == "scratch" && config_.model.vocab_size == 0) {
      config_.model.vocab_size = data_vocab > 0 ? data_vocab : 50257;
    }
    config_.model.validate();
    if (data_vocab > 0) {
      CHECK(data_vocab <= config_.model.vocab_size,
            "dataset '{}' has vocab_size {} but the model's vocab_size is {}: token ids would "
            "not fit (use --vocab_size={} or a matching dataset)",
            data_dir_, data_vocab, config_.model.vocab_size, data_vocab);
    }

    parse_dtype(config_.dtype, dtype_);  // validated above
    // ZeRO-1 in 16 bits shards the float32 master weights too (distributed/zero1.h): the model
    // keeps only what its kernels read (the 16-bit copy, the float32-read tensors), each rank its
    // masters.
    const bool shard_masters = config_.zero_stage == 1 && dtype_ != DType::kF32;
    model_ =
        std::make_unique<GPT>(config_.model, &tracker_,
                              shard_masters ? MasterWeights::kOutside : MasterWeights::kInModel,
                              backend_->host_addressable() ? nullptr : backend_);
    model_->set_kernel_choices({.naive_attention = config_.attention == "naive",
                                .fused = config_.fused,
                                .checkpoint_blocks = config_.activation_checkpointing,
                                .fused_mlp = config_.fused_mlp,
                                .recompute = static_cast<int>(config_.recompute)});
    model_->set_dtype(dtype_);
    scaler_ = GradScaler(/*enabled=*/dtype_ == DType::kF16);
    optimizer_step_ = OptimizerStep(config_.fused);
    if (config_.profile) model_->set_profile(&profile_);
    // The optimizers compute on this run's backend (Muon's Newton-Schulz matmuls in bfloat16 in
    // a bfloat16 run);
    // data-parallel ranks split its orthogonalizations (every rank steps the same gradients).
    OptimizerRuntime runtime;
    runtime.backend = backend_;
    runtime.matmul_dtype = dtype_;
    if (config_.zero_stage == 1) {  // optimizer state sharded across ranks
      zero_ = std::make_unique<Zero1>(*comm_, config_.optim, model_->table(), &tracker_,
                                      shard_masters, runtime);
      optimizer_ = &zero_->optimizer();
    } else {
      runtime.sharing.rank = comm_->rank();
      runtime.sharing.world = comm_->size();
      Communicator* comm = comm_;
      runtime.sharing.broadcast = [comm](float* data, int64_t n, int root) {
        comm->broadcast(data, n * static_cast<int64_t>(sizeof(float)), root);
      };
      owned_optimizer_ = make_optimizer(config_.optim, model_->table(), &tracker_, runtime);
      optimizer_ = owned_optimizer_.get();
    }
    ema_ = WeightEma(*backend_, config_.ema_decay, config_.ema_from, model_->table().total_numel(), &tracker_);
    if (from == "scratch" && shard_masters) {
      zero_->init_masters(model_->table(), static_cast<uint64_t>(config_.seed));
    } else if (from == "scratch") {
      model_->init_weights(static_cast<uint64_t>(config_.seed));
    } else if (from != "resume" && shard_masters) {
      zero_->set_masters_from_whole(loaded_params.data());
    } else if (from != "resume") {
      if (backend_->host_addressable()) {
        std::copy(loaded_params.begin(), loaded_params.end(), model_->params().begin());
      } else {
        backend_->upload(model_->params().data(), loaded_params.data(),
                         loaded_params.size() * sizeof(float));
      }
    }

    // Loaders: training stream, and evaluation streams reset before every eval.
    LoaderConfig lc;
    lc.data_mode = config_.data_mode;
    lc.sampling = config_.sampling;
    lc.batch_size = config_.batch_size;
    lc.block_size = config_.model.block_size;
    lc.seed = config_.seed;
    lc.vocab_size = config_.model.vocab_size;
    std::vector<std::string> train_path = split_files(data_dir_, "train");
    std::vector<std::string> val_path = split_files(data_dir_, "val");
    train_loader_ = std::make_unique<DataLoader>(train_path, lc);
    LoaderConfig ec = lc;
    ec.seed = config_.seed + 7919;  // evaluation batches: a stream of their own
    // Eval reads a few batches per eval: mapping the files avoids a second RAM copy of train.bin
    // when the training loader preloads it (its pages are then in the page cache anyway).
    ec.data_mode = "mmap";
    eval_loaders_[0] = std::make_unique<DataLoader>(train_path, ec);
    eval_loaders_[1] = std::make_unique<DataLoader>(val_path, ec);

    if (from == "resume") restore();
    std::vector<std::string> continued;
    if (nanogpt_ckpt) {
      const int64_t begin = zero_ ? zero_->shard_begin() : 0;
      const int64_t end = zero_ ? zero_->shard_end() : model_->table().total_numel();
      continued = continue_nanogpt_run(*nanogpt_ckpt, *optimizer_, begin, end,
                                       static_cast<uint64_t>(config_.seed));
      iter_num_ = nanogpt_ckpt->iter_num;
      best_val_loss_ = nanogpt_ckpt->best_val_loss;
      nanogpt_ckpt.reset();
    }
    if (shard_masters) zero_->publish_weights(*model_, *backend_);
    // The weights' moving average: restored above on resume, else (ema_from 0) it starts as the
    // weights the run starts from.
    if (ema_.enabled() && from != "resume" && config_.ema_from == 0) {
      ema_.start(std::as_const(*model_).params().data());
    }
    dp_->align(*train_loader_);

    if (dp_->is_main()) {
      fs::create_directories(config_.out_dir);
      std::string metrics_path = (fs::path(config_.out_dir) / "metrics.jsonl").string();
      if (from == "resume") {
        rewind_metrics(metrics_path, iter_num_);
        elapsed_base_ = last_elapsed_seconds(metrics_path);
      }
      metrics_ = MetricsLog(metrics_path, from == "resume");
    }

    peaks_ = measure_compute_peaks(dtype_, threads_);
    // The CPU's kernel ways: planned (and timed, kernel_choice=auto) only where the run computes
    // on a CPU backend.
    const KernelPlan kernel_plan =
        dynamic_cast<CpuBackend*>(backend_) ? choose_kernel_ways() : KernelPlan{};
    const MfuPeak mfu_peak = mfu_peak_for(peaks_);
    mfu_peak_flops_ = options_.device_peak_flops > 0 ? options_.device_peak_flops
                                                     : mfu_peak.flops_per_s;
    fpt_ = flops_per_token(config_.model, model_->table().num_params_for_mfu());
    tokens_per_iter_ =
        config_.batch_size * config_.model.block_size * config_.gradient_accumulation_steps;
    target_ = TimeToTarget(config_.target_loss, config_.target_eval_interval, tokens_per_iter_,
                           config_.target_eval_from);
    // A resumed run takes back the full evaluations of the records it kept (rewound above).
    if (target_.enabled() && from == "resume") {
      // [1] = 1: the evaluation at the resumed iteration is among them ([2]: at target), so it is
      // not run again. Rank 0 read the file; every rank must agree (the evaluation is collective).
      double resumed[2] = {0, 0};
      if (dp_->is_main()) {
        target_.restore_from_metrics(metrics_.path());
        if (target_.last_evaluated_iter() == iter_num_) {
          resumed[0] = 1;
          resumed[1] = target_.last_loss() <= config_.target_loss ? 1 : 0;
        }
      }
      comm_->broadcast(resumed, sizeof(resumed), 0);
      if (resumed[0] > 0) resumed_full_eval_at_target_ = resumed[1] > 0;
    }

    const ModelConfig& m = config_.model;
    say(fmt::format(
        "model: {} layers, {} heads, {} wide, context {}, vocab {} (padded {}), bias {}, "
        "dropout {}{}: {:.2f}M parameters",
        m.n_layer, m.n_head, m.n_embd, m.block_size, m.vocab_size, m.padded_vocab_size(),
        m.bias ? "on" : "off", m.dropout,
        m.attn_dropout < 0 ? "" : fmt::format(" ({} on the attention weights)", m.attn_dropout),
        static_cast<double>(model_->table().num_params_for_mfu()) / 1e6));
    say(
        fmt::format("data: {} ({} train / {} val tokens, {}, {}); {} tokens per iteration "
                    "(batch {} x block {} x accumulation {})",
                    data_dir_, train_loader_->num_tokens(), eval_loaders_[1]->num_tokens(),
                    train_loader_->mode_description(), config_.sampling, tokens_per_iter_,
                    config_.batch_size, m.block_size, config_.gradient_accumulation_steps));
    if (const std::string warmup = config_.context_schedule().describe(); !warmup.empty()) {
      say("sequence-length warmup: " + warmup + "; the same tokens per iteration");
    }
    if (options_.device_peak_flops > 0) {
      say(fmt::format("compute: {} (the one trainer on backend '{}'); MFU is relative to {:.0f} "
                      "TFLOP/s",
                      options_.device_description, backend_->memory_name(),
                      options_.device_peak_flops / 1e12));
    } else {
      say(fmt::format(
        "compute: {} threads on {}, kernels for {}; measured peak {:.0f} GFLOP/s fp32 FMA{}; MFU "
        "is relative to "
        "the {} peak {:.0f} GFLOP/s{}{}",
        threads_, cpu_model_name(), ctx_.cpu_target_description(),
        peaks_.fp32_fma.flops_per_s / 1e9, other_peaks(peaks_), mfu_peak.arithmetic,
        mfu_peak_flops_ / 1e9, mfu_peak.from_cache ? " (best measured here)" : "",
        kernel_plan.describe().empty() ? "" : "; " + kernel_plan.describe()));
    }
    if (comm_->size() > 1) {
      say(
          fmt::format("data-parallel: {}; {} micro-steps per rank per step, gradients averaged in "
                      "buckets of {} MB during the backward; rank 0 logs, evaluates and saves",
                      comm_->describe(), dp_->local_accumulation(), config_.bucket_cap_mb));
    }
    if (zero_) {
      say(fmt::format(
          "ZeRO-1: optimizer state{} sharded across {} ranks (rank 0 holds arena "
          "elements [{}, {}) of {}); gradients reduce-scattered, {} weights "
          "all-gathered",
          shard_masters ? " and float32 master weights" : "", comm_->size(), zero_->shard_begin(),
          zero_->shard_end(), model_->table().total_numel(), dtype_name(dtype_)));
    }
    if (from == "resume") {
      say(fmt::format("resumed from {} at iteration {} (best val loss {:.4f})", ckpt_dir_,
                      iter_num_, best_val_loss_));
    }
    for (const auto& line : continued) say(line);
  }

  // Kernel ways (kernels/kernel_ways.h): a resumed run keeps its checkpoint's (they are part of
  // its numerics) unless kernel_choice forces one; otherwise measured at this run's attention
  // shape, or forced. Every rank takes rank 0's.
  KernelPlan choose_kernel_ways() {
    const ModelConfig& m = config_.model;
    const AttentionShape shape{static_cast<int>(config_.batch_size), m.block_size, m.n_embd,
                               m.n_head, static_cast<float>(m.attention_dropout())};
    const UnitRates units{peaks_.bf16_dot.flops_per_s, peaks_.fp32_fma.flops_per_s};
    KernelPlan plan;
    AttentionBf16Way saved = AttentionBf16Way::kNative;
    if (dtype_ == DType::kBF16 && config_.kernel_choice == "auto" && saved_attention_way_ &&
        parse_way(*saved_attention_way_, saved)) {
      // The forced plan says what this CPU can run without timing anything.
      plan = plan_kernel_ways(ctx_, dtype_, shape, way_name(saved), threads_, units);
      plan.how = plan.ways.attention_bf16 == saved
                     ? "kept from the checkpoint"
                     : fmt::format(
                           "the checkpoint's '{}' cannot run on this CPU: {}, whose "
                           "rounding differs slightly",
                           way_name(saved), way_name(plan.ways.attention_bf16));
    } else {
      plan = plan_kernel_ways(ctx_, dtype_, shape, config_.kernel_choice, threads_, units);
    }
    // The small float32 products: the checkpoint's way, or measured at this run's shapes.
    const std::vector<ProductShape> products = step_products(
        config_, model_->table(), config_.batch_size * m.block_size, dp_->local_accumulation());
    SmallProductsWay saved_products = SmallProductsWay::kTiles;
    if (config_.kernel_choice == "auto" && saved_products_way_ &&
        parse_way(*saved_products_way_, saved_products)) {
      plan_small_products(plan, ctx_, dtype_, products, way_name(saved_products), threads_);
      if (!plan.small_products.empty()) plan.small_products_how = "kept from the checkpoint";
    } else {
      plan_small_products(plan, ctx_, dtype_, products, config_.kernel_choice, threads_);
    }
    int ways[2] = {static_cast<int>(plan.ways.attention_bf16),
                   static_cast<int>(plan.ways.small_products_f32)};
    comm_->broadcast(ways, sizeof(ways), 0);
    plan.ways.attention_bf16 = static_cast<AttentionBf16Way>(ways[0]);
    plan.ways.small_products_f32 = static_cast<SmallProductsWay>(ways[1]);
    ctx_.set_ways(plan.ways);
    // A CPU backend of the caller's (the off-host one of the tests) runs the same ways.
    if (auto* cpu = dynamic_cast<CpuBackend*>(backend_)) cpu->set_ways(plan.ways);
    return plan;
  }

  // A model key the user set explicitly must agree with the checkpoint being resumed.
  void check_resume_shape(ModelConfig saved) {
    ModelConfig asked = config_.model;
    auto saved_json = config_to_json(saved);
    auto asked_json = config_to_json(asked);
    std::string diffs;
    for (auto it = saved_json.begin(); it != saved_json.end(); ++it) {
      if (it.key() == "dropout" || !options_.explicit_keys.count(it.key())) continue;
      if (asked_json[it.key()] != it.value()) {
        diffs += fmt::format("{}{} = {} (checkpoint) vs {} (config)", diffs.empty() ? "" : ", ",
                             it.key(), it.value().dump(), asked_json[it.key()].dump());
      }
    }
    CHECK(diffs.empty(),
          "cannot resume {}: its architecture differs from the config: {}. Remove those keys to "
          "resume this run, or give a new --out_dir to start another",
          ckpt_dir_, diffs);
  }

  void restore() {
    // ZeRO-1: each rank reads only its shard of the optimizer state (and, with sharded masters,
    // of the master weights) from the checkpoint, so resuming holds no more than the run does.
    HostStaging staging(*backend_);  // off the host: read into host copies, then uploaded
    std::vector<StateArena> arenas;
    for (auto& t : optimizer_->state_tensors()) {
      arenas.push_back({t.name, staging.stage(t.data, t.numel, /*download=*/false)});
    }
    bool ema_found = false;
    const int64_t numel = model_->table().total_numel();
    if (ema_.enabled()) {
      arenas.push_back({"ema", staging.stage(ema_.data(), numel, /*download=*/false), &ema_found});
    }
    ArenaRange shard;
    if (zero_) shard = {zero_->shard_begin(), zero_->shard_end()};
    const bool shard_masters = zero_ && zero_->shards_masters();
    LoadedCheckpoint ck =
        load_checkpoint(ckpt_dir_, config_.model, model_->table(),
                        shard_masters ? staging.stage(zero_->master_shard(),
                                                      shard.end - shard.begin, false)
                                      : staging.stage(model_->params().data(), numel, false),
                        arenas, shard_masters ? shard : ArenaRange{}, shard);
    staging.upload_all();
    const TrainingState s = training_state_from_json(ck.state, ck.dir + "/state.json");
    const std::string saved_opt = s.optimizer.empty() ? optimizer_->name() : s.optimizer;
    CHECK(saved_opt == optimizer_->name(),
          "{}/state.json: the checkpoint was trained with optimizer '{}' but the config asks for "
          "'{}' (use --optimizer={})",
          ck.dir, saved_opt, optimizer_->name(), saved_opt);
    ema_.restore(ck.state.contains("ema") ? ck.state["ema"] : nlohmann::json(),
                 ck.dir + "/state.json");
    CHECK(!ema_.active() || ema_found,
          "{}/optimizer.safetensors holds no 'ema' tensors though state.json says the run kept "
          "the weights' moving average: the checkpoint is incomplete; start a new out_dir",
          ck.dir);
    iter_num_ = s.iter_num;
    best_val_loss_ = s.best_val_loss;
    if (ck.state.contains("kernel_ways") && ck.state["kernel_ways"].is_object() &&
        ck.state["kernel_ways"].contains("attention_bf16") &&
        ck.state["kernel_ways"]["attention_bf16"].is_string()) {
      saved_attention_way_ = ck.state["kernel_ways"]["attention_bf16"].get<std::string>();
    }
    if (ck.state.contains("kernel_ways") && ck.state["kernel_ways"].is_object() &&
        ck.state["kernel_ways"].contains("small_products_f32") &&
        ck.state["kernel_ways"]["small_products_f32"].is_string()) {
      saved_products_way_ = ck.state["kernel_ways"]["small_products_f32"].get<std::string>();
    }
    optimizer_->set_steps(s.optimizer_steps);
    train_loader_->set_state(s.train_loader);
    // A float16 run continues with its saved scale; a run switching to float16 starts afresh.
    if (scaler_.enabled() && s.grad_scaler) scaler_.set_state(*s.grad_scaler);
  }

  nlohmann::json training_state() {
    nlohmann::json s;
    s["state_version"] = kTrainingStateVersion;
    s["iter_num"] = iter_num_;
    s["best_val_loss"] = best_val_loss_;
    s["optimizer"] = optimizer_->name();
    s["optimizer_steps"] = optimizer_->steps();
    s["train_loader"] = train_loader_->state().to_json();
    if (dtype_ == DType::kBF16) {
      s["kernel_ways"] = {{"attention_bf16", way_name(ctx_.ways().attention_bf16)}};
    } else if (dtype_ == DType::kF32) {
      s["kernel_ways"] = {{"small_products_f32", way_name(ctx_.ways().small_products_f32)}};
    }
    if (scaler_.enabled()) s["grad_scaler"] = scaler_.to_json();
    if (ema_.enabled()) s["ema"] = ema_.to_json();
    s["config"] = config_to_json(config_);
    s["data_dir"] = fs::absolute(data_dir_).string();
    s["tokenizer_meta"] = dataset_meta_;
    return s;
  }

  void save() {
    HostStaging staging(*backend_);  // off the host: host copies, downloaded
    const int64_t numel = model_->table().total_numel();
    std::vector<ConstStateArena> arenas;
    if (zero_) {
      for (auto& [name, whole] : gathered_state_) arenas.push_back({name, whole.data()});
    } else {
      for (auto& t : optimizer_->state_tensors()) {
        arenas.push_back({t.name, staging.stage(t.data, t.numel, /*download=*/true)});
      }
    }
    if (ema_.enabled()) arenas.push_back({"ema", staging.stage(ema_.data(), numel, true)});
    std::map<std::string, std::string> meta = {{"optimizer", optimizer_->name()},
                                               {"steps", std::to_string(optimizer_->steps())}};
    Timer t;
    const float* params = gathered_params_.empty()
                              ? staging.stage(model_->params().data(), numel, /*download=*/true)
                              : gathered_params_.data();
    try {
      save_checkpoint(ckpt_dir_, config_.model, model_->table(), params, arenas, meta,
                      training_state());
    } catch (const Error& e) {
      // A full disk or an I/O error: the checkpoint already there stays as it was (save_checkpoint
      // writes a new one aside and swaps it in whole), and the run stops, saying where it is.
      fail("{}; training stopped at iteration {}: {}", e.what(), iter_num_, last_good_checkpoint());
    }
    result_.checkpoint_dir = ckpt_dir_;
    saved_at_ = iter_num_;
    say(fmt::format("saved checkpoint to {} ({:.0f} ms)", ckpt_dir_, t.ms()));
  }

  // Where the run can go on from after a failed save, for its error message.
  std::string last_good_checkpoint() const {
    const std::string resume = "resume from it with --init_from=resume once the disk has room";
    if (saved_at_ >= 0) {
      return fmt::format("the last good checkpoint, of iteration {}, is {}, unchanged; {}",
                         saved_at_, ckpt_dir_, resume);
    }
    if (fs::exists(fs::path(ckpt_dir_) / "state.json")) {
      return fmt::format("the checkpoint in {} (written before this run) is unchanged; {}",
                         ckpt_dir_, resume);
    }
    return "no checkpoint had been written yet";
  }

  // Mean loss over eval_iters batches of each split; loaders restart so every eval sees the same.
  std::pair<double, double> estimate_loss() {
    double losses[2] = {0, 0};
    Batch batch(config_.batch_size * config_.model.block_size);
    model_->set_profile(nullptr);  // the profile covers training steps only
    for (int split = 0; split < 2; ++split) {
      DataLoader& loader = *eval_loaders_[split];
      loader.reset();
      double sum = 0;
      for (int64_t k = 0; k < config_.eval_iters; ++k) {
        loader.next_batch(batch.inputs.data(), batch.targets.data());
        sum += model_->forward(*backend_, batch.inputs.data(), batch.targets.data(),
                               static_cast<int>(config_.batch_size), config_.model.block_size,
                               /*training=*/false);
      }
      losses[split] = sum / static_cast<double>(config_.eval_iters);
    }
    if (config_.profile) model_->set_profile(&profile_);
    return {losses[0], losses[1]};
  }

  void evaluate_and_maybe_save() {
    Timer t;
    const auto [train_loss, val_loss] = [&] {
      const EvaluateOnAverage on_average(ema_, [&] { return model_->params(); });  // (ema_decay)
      return estimate_loss();
    }();
    say(fmt::format("step {}: train loss {:.4f}, val loss {:.4f} ({:.0f} ms)", iter_num_,
                    train_loss, val_loss, t.ms()));
    nlohmann::ordered_json rec;
    rec["iter"] = iter_num_;
    rec["train_loss"] = train_loss;
    rec["val_loss"] = val_loss;
    rec["elapsed_s"] = elapsed_seconds();
    metrics_.write(rec);
    result_.last_val_loss = val_loss;
    bool improved = val_loss < best_val_loss_;
    if (improved || config_.always_save_checkpoint) {
      best_val_loss_ = std::min(best_val_loss_, val_loss);
      if (iter_num_ > 0 && !config_.eval_only) save();
    }
  }

  // Time to target: the loss on the whole validation split (all ranks take part), its record in
  // metrics.jsonl and the log. Returns whether it is at or below target_loss.
  bool evaluate_full_validation() {
    Timer t;
    model_->set_profile(nullptr);  // the profile covers training steps only
    const DataLoader& val = *eval_loaders_[1];
    std::vector<TokenSpan> files;
    for (int i = 0; i < val.num_files(); ++i) {
      files.push_back({val.file(i).tokens(), val.file(i).size()});
    }
    const FullEvalResult full = [&] {
      const EvaluateOnAverage on_average(ema_, [&] { return model_->params(); });  // (ema_decay)
      return full_split_loss(*model_, *backend_, files, config_.model.block_size,
                             static_cast<int>(config_.batch_size), *comm_);
    }();
    if (config_.profile) model_->set_profile(&profile_);
    const double eval_s = t.seconds();
    const bool was_reached = target_.reached();
    nlohmann::ordered_json rec =
        target_.record(iter_num_, full.mean_loss, eval_s, elapsed_seconds());
    say(fmt::format("step {}: full val loss {:.4f} over {} tokens ({:.0f} ms){}", iter_num_,
                    full.mean_loss, full.target_tokens, eval_s * 1e3,
                    target_.reached() && !was_reached
                        ? fmt::format(": target {:g} reached", config_.target_loss)
                        : std::string()));
    if (dp_->is_main()) metrics_.write(rec);
    return full.mean_loss <= config_.target_loss;
  }

  // The --profile table, against peaks measured now (after training, so the bandwidth probe's
  // buffers do not count in the run's peak memory above). The bandwidth is the best ever measured
  // here, as the FLOP peaks are: one probe on a busy host read 28 GB/s where the best is ~80, and
  // two op classes then read 98% and 106% of "peak".
  void print_profile() {
    if (profile_.steps() == 0) return;
    if (!backend_->host_addressable()) {  // a device: its peak and its bandwidth, not the CPU's
      const DeviceProfilePeaks device =
          measure_device_profile_peaks(*backend_, options_.device_peak_flops);
      say(fmt::format("profile on {} (its {} peak of {:.0f} TFLOP/s stands as fp32 below, and "
                      "its copy bandwidth measured now):",
                      backend_->memory_name(), dtype_name(dtype_),
                      options_.device_peak_flops / 1e12));
      say(profile_.table(device.compute, device.bytes_per_s));
      return;
    }
    const double bandwidth =
        remember_best_peak("memory triad bytes/s", measure_memory_bandwidth(threads_), threads_)
            .flops_per_s;
    say(profile_.table(peaks_, bandwidth));
  }

  // A non-finite loss or gradient norm ends the run at once: stepping would write NaN into the
  // weights, and every later checkpoint would carry them. Nothing is saved, so the last checkpoint
  // stays the last good state.
  void stop_if_not_finite(double loss, double norm, double lr) const {
    if (std::isfinite(loss) && std::isfinite(norm)) return;
    const bool have_ckpt = fs::exists(fs::path(ckpt_dir_) / "state.json");
    fail(
        "iter {}: the {} is not finite (loss {}, gradient norm {}); training stopped before the "
        "optimizer step, nothing was saved{}. Likely causes: a learning rate too high for this "
        "model (lr {:.3e}; lower learning_rate or raise warmup_iters), no gradient clipping "
        "(grad_clip {}; nanoGPT uses 1.0), bad input data (check the token files), or values "
        "beyond the range of dtype {} (float16 without loss scaling overflows above 65504; "
        "bfloat16 and float32 reach 3e38). {}",
        iter_num_, std::isfinite(loss) ? "gradient norm" : "loss", loss, norm,
        have_ckpt ? fmt::format(" ({} holds the last good checkpoint)", ckpt_dir_) : "", lr,
        config_.optim.grad_clip, config_.dtype,
        have_ckpt ? "Resume from it with --init_from=resume and a lower learning_rate."
                  : "Start again with a lower learning_rate.");
  }

  // ZeRO-1: every rank sends its shard of the optimizer state (and of the master weights where
  // they are sharded) for rank 0's checkpoint; a collective, so every rank calls it.
  void gather_for_save() {
    if (!zero_) return;
    zero_->gather_state(&gathered_state_);
    if (zero_->shards_masters()) zero_->gather_masters(&gathered_params_);
  }

  // Why the run should stop before the step of iter_num_: "SIGTERM" (SIGINT, SIGUSR1), or
  // "max_wall_minutes = M" when this process has run so long that the next step would pass M
  // minutes; "" to go on. Every rank agrees (one rank's signal stops them all at the same step).
  std::string stop_reason() {
    double asked[2] = {static_cast<double>(stop_.signal()), 0.0};
    if (config_.max_wall_minutes > 0) {
      const double next_step_s = step_ms_.empty() ? 0.0 : step_ms_.back() / 1e3;
      asked[1] = wall_.seconds() + next_step_s >= config_.max_wall_minutes * 60.0 ? 1.0 : 0.0;
    }
    if (comm_->size() > 1) comm_->all_reduce_max(asked, 2);
    if (asked[0] > 0) return StopRequest::signal_name(static_cast<int>(asked[0]));
    if (asked[1] > 0) return fmt::format("max_wall_minutes = {:g}", config_.max_wall_minutes);
    return "";
  }

  // Ends the run before the step of iter_num_: the checkpoint (the same state as an evaluation's,
  // so a resumed run continues bit for bit), unless it was written at this iteration already or no
  // step was taken, then where it stopped and how to go on.
  void stop_for(const std::string& why) {
    if (iter_num_ > 0) {
      // Every rank takes part in the gather (a collective): only rank 0 knows whether its
      // evaluation just saved this iteration.
      gather_for_save();
      if (dp_->is_main() && saved_at_ != iter_num_) save();
      gathered_state_.clear();
      gathered_params_ = Buffer<float>();
    }
    result_.stopped_by = why;
    say(fmt::format("stopped by {} before iteration {} (of {}): {}; exit status {}", why, iter_num_,
                    config_.max_iters,
                    result_.checkpoint_dir.empty()
                        ? std::string("no step taken, no checkpoint written")
                        : fmt::format("checkpoint {}, continue with --init_from=resume",
                                      result_.checkpoint_dir),
                    kStoppedExitCode));
  }

  void loop() {
    const int B = static_cast<int>(config_.batch_size);
    const int T = config_.model.block_size;
    const int64_t accum = config_.gradient_accumulation_steps;
    const ContextSchedule contexts = config_.context_schedule();
    Batch batch(static_cast<int64_t>(B) * T);
    double running_mfu = -1;
    loop_timer_ = Timer();
    Timer since_start;
    int64_t first_iter = iter_num_;
    for (;;) {
      // Time to target: the full evaluation comes first; reaching the target with stop_at_target
      // makes this iteration the run's last (evaluated and saved as at max_iters).
      bool stop_here = false;
      if (!config_.eval_only && target_.due(iter_num_, config_.max_iters)) {
        const bool at_target = iter_num_ == first_iter && resumed_full_eval_at_target_
                                   ? *resumed_full_eval_at_target_
                                   : evaluate_full_validation();
        stop_here = at_target && config_.stop_at_target;
      }
      const bool interval_eval = iter_num_ % config_.eval_interval == 0 &&
                                 (iter_num_ != first_iter || config_.eval_at_start);
      const bool eval_now =
          interval_eval || iter_num_ == config_.max_iters || config_.eval_only || stop_here;
      // ZeRO-1: every rank sends its shard of the optimizer state for rank 0's checkpoint.
      if (eval_now && iter_num_ > 0 && !config_.eval_only) gather_for_save();
      if (dp_->is_main() && eval_now) evaluate_and_maybe_save();
      gathered_state_.clear();
      gathered_params_ = Buffer<float>();
      if (config_.eval_only || iter_num_ >= config_.max_iters || stop_here) break;
      // A signal or max_wall_minutes: checkpoint here, before this iteration's step, and end.
      if (const std::string why = stop_reason(); !why.empty()) {
        stop_for(why);
        break;
      }

      Timer step_timer;
      const double lr = learning_rate_at(config_.optim, iter_num_);
      // The sequence-length warmup: the (B, T) batch as (B * T / Tc, Tc), the same tokens.
      const int Tc = contexts.context_at(iter_num_);
      const int Bc = B * (T / Tc);
      double loss_sum = 0;
      const int64_t local_accum = dp_->local_accumulation();
      for (int64_t micro = 0; micro < local_accum; ++micro) {
        {
          Timer data_timer;
          dp_->next_batch(*train_loader_, batch.inputs.data(), batch.targets.data());
          if (config_.profile) profile_.add(OpClass::kData, data_timer.seconds(), 0, 0);
        }
        loss_sum += model_->forward(
            *backend_, batch.inputs.data(), batch.targets.data(), Bc, Tc,
            /*training=*/true, dropout_seed_for(config_.seed, iter_num_, dp_->global_micro(micro)),
            /*grad_scale=*/scaler_.scale() / static_cast<float>(accum));
        dp_->before_backward(*model_, micro + 1 == local_accum);
        model_->backward(*backend_);
      }
      double comm_s = dp_->finish_step(*model_, &loss_sum);
      Timer optimizer_timer;
      // float16: the gradients are unscaled before the norm and clipping (exact: the scale is a
      // power of two). An inf/nan among them makes the global norm non-finite on every rank alike
      // (ZeRO-1 included), which skips this step and halves the scale. A non-finite loss is no
      // overflow: it stops the run as in float32.
      // Without ZeRO-1, OptimizerStep runs the unscale, norm, clipping, update, 16-bit copy and
      // zeroing (fused=True: in two passes over memory, optimizer_step.h).
      double norm;
      if (zero_) {
        if (scaler_.enabled()) scaler_.unscale(*backend_, model_->grads());
        norm = zero_->reduce_gradients(model_->grads().data(), &comm_s);
      } else {
        norm = optimizer_step_.measure(*backend_, *model_, scaler_, config_.optim.grad_clip);
      }
      const bool skipped = scaler_.enabled() && !std::isfinite(norm) && std::isfinite(loss_sum);
      bool grads_zeroed = false;
      if (!skipped) {
        stop_if_not_finite(loss_sum / static_cast<double>(accum), norm, lr);
        if (zero_) {
          zero_->step(*model_, *backend_, lr, norm, config_.optim.grad_clip, &comm_s);
        } else {
          optimizer_step_.apply(*model_, *optimizer_, lr);
          grads_zeroed = true;
        }
      }
      if (ema_.enabled()) ema_.after_step(std::as_const(*model_).params().data(), iter_num_);
      scaler_.update(skipped);
      result_.comm_wait_seconds += comm_s;
      if (!grads_zeroed) model_->zero_grad();
      if (config_.profile) {
        const double n = static_cast<double>(model_->table().total_numel());
        const int state = static_cast<int>(optimizer_->state_tensors().size());
        profile_.add(OpClass::kOptimizer, optimizer_timer.seconds(),
                     skipped ? 0 : optimizer_->flops_per_step(),
                     zero_ || skipped ? 4.0 * n * (3 + 2.0 * state + 2)
                                      : optimizer_step_.bytes_moved(*model_, state));
      }
      double ms = step_timer.ms();
      if (config_.profile) profile_.add_step(ms / 1e3);
      step_ms_.push_back(ms);
      const double loss = loss_sum / static_cast<double>(accum);
      result_.last_train_loss = loss;
      ++result_.steps_run;

      double mfu =
          model_flops_utilization(Tc == T ? fpt_ : flops_per_token_at(Tc),
                                  static_cast<double>(tokens_per_iter_), ms / 1e3, mfu_peak_flops_);
      running_mfu = running_mfu < 0 ? mfu : 0.9 * running_mfu + 0.1 * mfu;
      double tok_s = static_cast<double>(tokens_per_iter_) / (ms / 1e3);
      if (iter_num_ % config_.log_interval == 0) {
        int64_t done = iter_num_ + 1 - first_iter;
        double eta = since_start.seconds() / static_cast<double>(done) *
                     static_cast<double>(config_.max_iters - iter_num_ - 1);
        const std::string scaling =
            scaler_.enabled() ? fmt::format(", scale {:g}{}, skipped {}", scaler_.state().scale,
                                            skipped ? " (this step skipped: inf/nan grads)" : "",
                                            scaler_.state().skipped_steps)
                              : std::string();
        // Per-rank peaks (a collective, so every rank takes part even though rank 0 alone logs).
        const std::vector<int64_t> rank_peaks = dp_->gather_per_rank(tracker_.peak_bytes());
        const std::vector<int64_t> rank_rss = dp_->gather_per_rank(process_peak_rss_bytes());
        say(fmt::format(
            "iter {}: loss {:.4f}, time {:.1f}ms{}, mfu {:.1f}%, {:.0f} tok/s, lr {:.3e}, "
            "norm {:.3f}{}, mem {}, eta {}",
            iter_num_, loss, ms,
            comm_->size() > 1 ? fmt::format(" (comm wait {:.1f}ms)", comm_s * 1e3) : "",
            running_mfu * 100, tok_s, lr, norm, scaling, format_rank_memory(rank_peaks, rank_rss),
            format_duration(eta)));
        nlohmann::ordered_json rec;
        rec["iter"] = iter_num_;
        rec["loss"] = loss;
        rec["lr"] = lr;
        if (!skipped) rec["grad_norm"] = norm;  // (a skipped step has no finite norm)
        if (scaler_.enabled()) {
          rec["loss_scale"] = scaler_.state().scale;  // after this step's update
          rec["skipped"] = skipped;
          rec["skipped_steps"] = scaler_.state().skipped_steps;
        }
        rec["ms"] = ms;
        if (comm_->size() > 1) rec["comm_wait_ms"] = comm_s * 1e3;
        rec["tokens_per_s"] = tok_s;
        rec["mfu"] = mfu;
        rec["peak_mem_bytes"] = tracker_.peak_bytes();
        rec["peak_rss_bytes"] = process_peak_rss_bytes();
        if (comm_->size() > 1) {
          rec["rank_peak_mem_bytes"] = rank_peaks;
          rec["rank_peak_rss_bytes"] = rank_rss;
        }
        rec["elapsed_s"] = elapsed_seconds();
        metrics_.write(rec);
      }
      ++iter_num_;
    }
    result_.iter_num = iter_num_;
    result_.best_val_loss = best_val_loss_;
    if (target_.enabled()) {
      if (dp_->is_main()) metrics_.write(target_.final_record(iter_num_));
      result_.target_reached = target_.reached();
      result_.target_iter = target_.reached_iter();
    }
  }

  TrainConfig config_;
  TrainOptions options_;
  SingleProcessCommunicator single_process_;
  Communicator* comm_ = nullptr;
  std::unique_ptr<DataParallel> dp_;
  TrainResult result_;
  MemoryTracker tracker_;
  CpuBackend ctx_;     // the CPU's: plans the kernel ways; the backend unless the caller gives one
  Backend* backend_ = nullptr;  // what the run computes on (options_.device or &ctx_)
  int threads_ = 1;
  // The resumed checkpoint's kernel_ways: attention_bf16, small_products_f32.
  std::optional<std::string> saved_attention_way_, saved_products_way_;
  std::string data_dir_, ckpt_dir_;
  nlohmann::json dataset_meta_;
  std::unique_ptr<GPT> model_;
  WeightEma ema_;  // the weights' moving average (ema_decay; off by default)
  DType dtype_ = DType::kF32;
  GradScaler scaler_;                           // enabled for float16 only
  OptimizerStep optimizer_step_{true};          // set from config_.fused in setup
  std::unique_ptr<Optimizer> owned_optimizer_;  // zero_stage 0
  std::unique_ptr<Zero1> zero_;                 // zero_stage 1
  Optimizer* optimizer_ = nullptr;              // one of the two
  std::vector<std::pair<std::string, Buffer<float>>> gathered_state_;  // ZeRO-1, for rank 0's save
  Buffer<float> gathered_params_;  // ZeRO-1 with sharded masters: rank 0's whole masters to save
  std::unique_ptr<DataLoader> train_loader_;
  std::unique_ptr<DataLoader> eval_loaders_[2];
  MetricsLog metrics_;
  // Measured peaks (bf16: 0 unless a bfloat16 run on a CPU with bf16 dot products) and the one
  // MFU is taken against (metrics.h, mfu_peak_for).
  ComputePeaks peaks_;  // the measured peaks of the run's arithmetic units
  // FLOPs per token at context Tc (the sequence-length warmup's): attention over Tc positions.
  double flops_per_token_at(int Tc) const {
    ModelConfig shorter = config_.model;
    shorter.block_size = Tc;
    return flops_per_token(shorter, model_->table().num_params_for_mfu());
  }
  double mfu_peak_flops_ = 0, fpt_ = 0;
  int64_t tokens_per_iter_ = 0;
  TimeToTarget target_;  // off unless target_loss > 0
  // Resumed at an iteration whose full evaluation metrics.jsonl already holds: whether it was at
  // the target (that evaluation is not run again).
  std::optional<bool> resumed_full_eval_at_target_;
  int64_t iter_num_ = 0;
  double best_val_loss_ = 1e9;
  std::vector<double> step_ms_;
  // Wall seconds of training (steps and evals) across resumes: metrics.jsonl's elapsed_s.
  double elapsed_seconds() const { return elapsed_base_ + loop_timer_.seconds(); }
  StopRequest stop_;       // SIGTERM, SIGINT, SIGUSR1 while the run lives: stop at a step boundary
  Timer wall_;             // since run() began: max_wall_minutes
  int64_t saved_at_ = -1;  // the iteration of the last checkpoint this run wrote
  double elapsed_base_ = 0;  // from the last record kept when resuming
  Timer loop_timer_;
  OpProfile profile_;  // filled only with --profile=True
};

}  // namespace

TrainResult run_training(TrainConfig config, const TrainOptions& options) {
  return TrainingRun(std::move(config), options).run();
}

}  // namespace nanogpt
