#include "tandem/data/digits.h"

#include <filesystem>

#include "tandem/errors.h"
#include "tandem/nd/elementwise.h"
#include "tandem/nd/idx.h"

namespace tandem::data {
namespace {

std::string path_of(const std::string& directory, const char* file) {
  return (std::filesystem::path(directory) / file).string();
}

LabeledData load_part(const std::string& directory, const char* images_file,
                      const char* labels_file, const DigitsOptions& options) {
  const std::string images_path = path_of(directory, images_file);
  const std::string labels_path = path_of(directory, labels_file);
  LabeledData part{nd::read_idx(images_path, options.image_dtype, options.device),
                   nd::read_idx(labels_path, options.label_dtype, options.device)};
  const nd::Shape& images = part.images.shape();
  const nd::Shape& labels = part.labels.shape();
  if (images.ndim() != 3 || images[1] != 8 || images[2] != 8) {
    throw Error("tandem: load_digits: '" + images_path + "' holds an array of shape " +
                images.to_string() + "; the digits are Nx8x8 images");
  }
  if (labels.ndim() != 1 || labels[0] != images[0]) {
    throw Error("tandem: load_digits: '" + labels_path + "' holds labels of shape " +
                labels.to_string() + " for the " + std::to_string(images[0]) + " images of '" +
                images_path + "'; expected " + std::to_string(images[0]));
  }
  if (options.scale_to_unit) {
    part.images = part.images / 16.0;
  }
  return part;
}

}  // namespace

bool digits_available(const std::string& directory) {
  for (const char* file : kDigitsFiles) {
    std::error_code error;
    if (!std::filesystem::is_regular_file(path_of(directory, file), error)) {
      return false;
    }
  }
  return true;
}

DigitsDataSet load_digits(const std::string& directory, const DigitsOptions& options) {
  for (const char* file : kDigitsFiles) {
    std::error_code error;
    if (!std::filesystem::is_regular_file(path_of(directory, file), error)) {
      throw Error("tandem: load_digits: '" + path_of(directory, file) +
                  "' does not exist; run scripts/fetch-digits.sh (or pass the directory it wrote "
                  "to)");
    }
  }
  if (options.scale_to_unit && !ops::is_floating(options.image_dtype)) {
    throw Error(std::string("tandem: load_digits: scale_to_unit needs a floating image_dtype, "
                            "not ") +
                nd::dtype_name(options.image_dtype) + " (or set scale_to_unit = false)");
  }
  return {load_part(directory, kDigitsFiles[0], kDigitsFiles[1], options),
          load_part(directory, kDigitsFiles[2], kDigitsFiles[3], options)};
}

}  // namespace tandem::data
