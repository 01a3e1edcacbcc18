// tandem::nn: layers, parameters, initializers, optimizers and the Trainer, in the spirit of
// Gluon. docs/user-guide.md ("Training") walks through a whole training loop.
//
//   namespace nn = tandem::nn;
//   nn::Sequential net;
//   net.add(nn::Dense(64, nn::relu)).add(nn::Dense(10));
//   net.initialize(nn::Xavier());
//   nn::Trainer trainer(net.collect_params(), nn::SGD(0.1));
#pragma once

#include "tandem/nn/activation.h"
#include "tandem/nn/basic_layers.h"
#include "tandem/nn/batch_norm.h"
#include "tandem/nn/block.h"
#include "tandem/nn/conv_layers.h"
#include "tandem/nn/dense.h"
#include "tandem/nn/export.h"
#include "tandem/nn/gradient_clipping.h"
#include "tandem/nn/gradient_exchange.h"
#include "tandem/nn/imported_block.h"
#include "tandem/nn/initializer.h"
#include "tandem/nn/loss.h"
#include "tandem/nn/lr_scheduler.h"
#include "tandem/nn/metric.h"
#include "tandem/nn/models.h"
#include "tandem/nn/optimizer.h"
#include "tandem/nn/parameter.h"
#include "tandem/nn/pipeline.h"
#include "tandem/nn/pipeline_schedule.h"
#include "tandem/nn/sequential.h"
#include "tandem/nn/trainer.h"
#include "tandem/nn/training_step.h"
