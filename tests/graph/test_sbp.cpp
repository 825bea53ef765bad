// The SBP signatures of the core's ops (tests/sbp_check.hpp), checked through a few jobs that use
// them together: dense layers and their gradients, images, in-place assigns, optimizer updates. Ops
// with a test file of their own check theirs there; the coverage suite checks that every op declaring
// signatures was checked somewhere.
#include <doctest/doctest.h>

#include "graph/job_graph.hpp"
#include "kernels/attrs/dropout_attrs.hpp"
#include "sbp_check.hpp"
#include "weir/optimizers.hpp"
#include "weir/weir.hpp"

using namespace weir;
using namespace weir::internal;
using weir::testing::CheckSbpSignatures;

TEST_CASE("every declared SBP signature of every op gives the one-device result on 2 and 3 devices") {
  auto merge = [](const Job& job) { CHECK(!CheckSbpSignatures(job).empty()); };
  {  // dense layers, elementwise families, reductions, softmax, cross entropies and their gradients
    JobBuilder builder("dense", JobType::kPredict);
    Blob x = builder.Placeholder("x", Shape{7, 5});
    Blob w = builder.Placeholder("w", Shape{5, 6});
    Blob bias = builder.Placeholder("bias", Shape{6});
    Blob labels = builder.Placeholder("labels", Shape{7}, DType::kI32);
    Blob y = MatMul(x, w);
    MatMul(x, Transpose(w, {{1, 0}}), {.transpose_b = true});
    MatMul(Transpose(x, {{1, 0}}), w, {.transpose_a = true, .alpha = 0.5});
    Blob h = BiasAdd(y, bias);
    Blob r = Relu(h);
    Blob s = Sigmoid(r);
    Blob t = Tanh(s);
    Blob e = Exp(t);
    Blob sum = Add(Sub(Mul(e, bias), Div(e, Reshape(bias, {{1, 6}}))), Maximum(e, Minimum(t, s)));
    Blob powered = Scalar(sum, {ScalarOpKind::kPow, 2.0});
    // dropout itself declares no split (each device would draw the same mask); its gradient does.
    Blob mask = builder.Placeholder("mask", Shape{7, 6}, DType::kU8);
    builder.Output("dropout_grad", AddOp1("dropout_grad", {e, mask}, DropoutAttrs{.rate = 0.3}, {}));
    Blob scaled = ScalarAdd(ScalarMul(powered, 3.0), 1.0);
    Blob clipped = ClipByValue(Identity(scaled), {.min = 0.9, .max = 3.0});
    Blob cast = Cast(clipped, {DType::kF32});
    Blob soft = Softmax(cast);
    Blob loss = SparseSoftmaxCrossEntropy(labels, soft);
    Blob onehot = OneHot(labels, {.depth = 6});
    Blob ce = SoftmaxCrossEntropy(onehot, cast);
    Blob sig = SigmoidCrossEntropy(onehot, cast);
    Blob reduced = Add(ReduceSum(sig, {{0}}), ReduceMean(sig, {{0}, false}));
    ReduceSum(sig, {{1}, true});
    ReduceMean(sig, {{1}});
    Blob total = Add(ReduceSum(loss), ReduceSum(ce));
    Blob sliced = Slice(Mod(Mul(x, x), ScalarAdd(x, 2.0)), {.start = {0, 1}, .stop = {7, 4}, .step = {1, 1}});  // rows whole
    builder.Output("greater", Compare(e, Mul(t, bias), {CompareOpKind::kGreater}));
    builder.Output("where", Where(Compare(e, t, {CompareOpKind::kGreater}), e, Mul(t, bias)));
    builder.Output("pow", Pow(e, Reshape(bias, {{1, 6}})));  // a positive base
    // Embedding-style lookups (labels index w's rows and x's columns) and the segment sums back.
    Blob looked_up = Add(ReduceSum(Gather(w, labels)), ReduceSum(Gather(x, labels, 1)));
    Blob segments = ReduceSum(UnsortedSegmentSum(x, labels, 3));
    // Per-example outer products: a batch of 7 (5 x 1)·(1 x 5).
    segments = Add(segments, ReduceSum(BatchMatMul(Reshape(x, {{7, 5, 1}}), Reshape(x, {{7, 1, 5}}))));
    Blob all = Add(Add(Add(ReduceSum(reduced), total), ReduceSum(sliced)), Add(looked_up, segments));
    builder.Output("all", all);
    const std::vector<Blob> grads = Gradients(all, {x, w, bias});
    builder.Output("dx", grads[0]);
    builder.Output("dw", grads[1]);
    merge(builder.Build());
  }
  {  // images: convolution, pooling, reshapes and transposes, and their gradients
    JobBuilder builder("images", JobType::kPredict, JobConfig{.channels_last_convolutions = true});
    Blob x = builder.Placeholder("x", Shape{6, 3, 5, 5});
    Blob w = builder.Placeholder("w", Shape{4, 3, 3, 3});
    Blob conv = Conv2D(x, w, {.padding = SamePadding()});
    Blob pooled = AvgPool2D(MaxPool2D(conv, {.ksize = {2, 2}, .strides = {1, 1}}), {.ksize = {2, 2}, .strides = {1, 1}});
    Blob flat = Reshape(pooled, {{6, -1}});
    Blob out = ReduceSum(flat);
    builder.Output("out", out);
    const std::vector<Blob> grads = Gradients(out, {x, w});
    builder.Output("dx", grads[0]);
    builder.Output("dw", grads[1]);
    merge(builder.Build());
  }
  {  // assign: a value into a variable, in place
    JobBuilder builder("assigns", JobType::kPredict);
    Blob x = builder.Placeholder("x", Shape{4, 5});
    Blob v = builder.Variable("v", {.shape = Shape{4, 5}, .dtype = DType::kF32});
    builder.Output("before", Identity(v));
    Assign(v, ScalarMul(x, 2.0));
    merge(builder.Build());
  }
  // Elementwise optimizer updates of a variable split by rows (model parallelism).
  for (const Optimizer& optimizer : {Sgd(PiecewiseConstantScheduler({}, {0.1}), 0.0), Sgd(PiecewiseConstantScheduler({}, {0.1}), 0.9),
                                     Adam(PiecewiseConstantScheduler({}, {0.1})), RmsProp(PiecewiseConstantScheduler({}, {0.1}))}) {
    JobBuilder builder("updates", JobType::kTrain);
    Blob x = builder.Placeholder("x", Shape{4, 5});
    Blob y = Dense(x, 7, {.kernel_regularizer = L2(0.1), .name = "layer"});
    builder.Minimize(optimizer, y);
    merge(builder.Build());
  }
}
