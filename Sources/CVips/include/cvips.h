// libvips for byteclub-server (image sizes, thumbnails), ShareKit (image details) and the Byte
// Club app (thumbnails shown in a terminal, contact sheets).
//
// libvips is loaded with dlopen the first time a cvips_start* call runs, not linked: it
// brings about a hundred shared libraries (GLib, poppler, fftw, …) whose symbol lookups
// cost every process that links it ~30 ms at start, and `ferry get` or a share extension
// that never looks at an image must not pay that. libvips' calls are C varargs, which Swift
// cannot call, so these wrappers fix the arguments the callers need.
#ifndef CVIPS_H
#define CVIPS_H

#include <stddef.h>

/// Loads and starts libvips once per process, under `program`'s name. Returns 0 on success;
/// -1 when libvips is not installed or does not start (cvips_load_error() says why).
int cvips_start_as(const char *program);

/// cvips_start_as("byteclub-server").
int cvips_start(void);

/// Why the last cvips_start* failed, or "" when it did not.
const char *cvips_load_error(void);

/// Reads only the header of the image file at `path`: width and height. Returns 0 on success.
int cvips_dimensions_file(const char *path, int *width, int *height);

/// Opens the image file at `path` with sequential access and reads its header only: the
/// pixels would be decoded on first use, and this never uses them. Gives the width and
/// height (of the first page), the EXIF orientation (1–8, 1 when absent), the number of
/// pages or frames, and the loader libvips chose ("jpegload", "pngload", …) copied into
/// `loader`. Returns 0 on success; on failure copies libvips' message into `error`.
int cvips_header_file(const char *path, int *width, int *height, int *orientation, int *pages,
                      char *loader, size_t loader_size, char *error, size_t error_size);

/// Decodes the image file at `path`, shrinks it to fit `width` x `height` (never enlarges),
/// and encodes it as `suffix` (".jpg" or ".png") into a buffer the caller frees with cvips_free.
int cvips_thumbnail_file(const char *path, int width, int height, const char *suffix,
                         void **buffer, size_t *length);

/// As `cvips_thumbnail_file`, but fills the `width` x `height` box and crops what overflows,
/// keeping the centre (Imgur's square `s` and `b` thumbnails). Never enlarges.
int cvips_thumbnail_file_cropped(const char *path, int width, int height, const char *suffix,
                                 void **buffer, size_t *length);

/// Decodes the image file at `path`, shrinks it to fit `width` x `height` (never enlarges), and
/// gives its pixels as 8-bit sRGB, 3 bytes a pixel, row by row (alpha flattened on black), in a
/// buffer the caller frees with cvips_free, and the size it has. Returns 0 on success.
int cvips_rgb_file(const char *path, int width, int height, void **pixels, int *out_width, int *out_height);

/// Writes a contact sheet to `output` (its suffix picks the format, e.g. ".jpg"): `count`
/// pictures fitted into `cell` x `cell` squares on white, each with its label under it,
/// `across` to a row. Returns 0 on success; on failure copies the reason into `error`.
int cvips_contact_sheet(const char *const *paths, const char *const *labels, int count, int cell, int across,
                        const char *output, char *error, size_t error_size);

/// Frees a buffer a thumbnail or pixels call returned.
void cvips_free(void *buffer);

#endif
