// tandem: the whole front end in one include.
//
//   #include <tandem/tandem.h>
//   namespace nd = tandem::nd;
//
//   auto x = nd::random::uniform({2000, 2000});   // returns at once: queued
//   auto y = nd::dot(x, x).sum();                  // queued behind x
//   std::cout << y << "\n";                        // waits for y only
//   nd::waitall();                                 // waits for everything; rethrows errors
//
// docs/user-guide.md walks through it.
#pragma once

#include "tandem/data/data_loader.h"
#include "tandem/data/digits.h"
#include "tandem/data/mnist.h"
#include "tandem/device.h"
#include "tandem/device_info.h"
#include "tandem/engine.h"
#include "tandem/errors.h"
#include "tandem/nd/autograd.h"
#include "tandem/nd/convolution.h"
#include "tandem/nd/creation.h"
#include "tandem/nd/elementwise.h"
#include "tandem/nd/engine_scope.h"
#include "tandem/nd/hybridize.h"
#include "tandem/nd/idx.h"
#include "tandem/nd/join.h"
#include "tandem/nd/linalg.h"
#include "tandem/nd/multi_device.h"
#include "tandem/nd/ndarray.h"
#include "tandem/nd/network.h"
#include "tandem/nd/optimizer_updates.h"
#include "tandem/nd/pooling.h"
#include "tandem/nd/random.h"
#include "tandem/nd/reduce.h"
#include "tandem/nd/save_load.h"
#include "tandem/nn/nn.h"
