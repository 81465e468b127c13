// libvips, from Debian's libvips-dev (scripts/install-deps): image sizes and thumbnails.
// libvips' calls are C varargs, which Swift cannot call, so these small inline wrappers
// fix the arguments ByteClubServer needs.
#include <vips/vips.h>

/// Starts libvips once per process; returns 0 on success.
static inline int cvips_start(void) {
    return VIPS_INIT("byteclub-server");
}

/// Reads only the header of the image file at `path`: width and height. Returns 0 on success.
static inline int cvips_dimensions_file(const char *path, int *width, int *height) {
    VipsImage *image = vips_image_new_from_file(path, NULL);
    if (image == NULL) { vips_error_clear(); return -1; }
    *width = vips_image_get_width(image);
    *height = vips_image_get_height(image);
    g_object_unref(image);
    return 0;
}

/// Decodes the image file at `path`, shrinks it to fit `width` x `height` (never enlarges),
/// and encodes it as `suffix` (".jpg" or ".png") into a buffer the caller frees with g_free.
static inline int cvips_thumbnail_file(const char *path, int width, int height, const char *suffix,
                                       void **buffer, size_t *length) {
    VipsImage *thumb = NULL;
    if (vips_thumbnail(path, &thumb, width, "height", height, "size", VIPS_SIZE_DOWN, NULL) != 0) {
        vips_error_clear();
        return -1;
    }
    int result = vips_image_write_to_buffer(thumb, suffix, buffer, length, NULL);
    g_object_unref(thumb);
    if (result != 0) { vips_error_clear(); }
    return result;
}

static inline void cvips_free(void *buffer) { g_free(buffer); }

// ShareKit: image details without decoding the pixels.

/// Starts libvips once per process under `program`'s name; returns 0 on success.
static inline int cvips_start_as(const char *program) {
    return VIPS_INIT(program);
}

/// Opens the image file at `path` with sequential access and reads its header only: the
/// pixels would be decoded on first use, and this never uses them. Gives the width and
/// height (of the first page), the EXIF orientation (1–8, 1 when absent), the number of
/// pages or frames, and the loader libvips chose ("jpegload", "pngload", …) copied into
/// `loader`. Returns 0 on success; on failure copies libvips' message into `error`.
static inline int cvips_header_file(const char *path, int *width, int *height, int *orientation,
                                    int *pages, char *loader, size_t loader_size,
                                    char *error, size_t error_size) {
    VipsImage *image = vips_image_new_from_file(path, "access", VIPS_ACCESS_SEQUENTIAL, NULL);
    if (image == NULL) {
        g_strlcpy(error, vips_error_buffer(), error_size);
        vips_error_clear();
        return -1;
    }
    *width = vips_image_get_width(image);
    *height = vips_image_get_page_height(image);
    *orientation = vips_image_get_orientation(image);
    *pages = vips_image_get_n_pages(image);
    const char *name = NULL;
    loader[0] = '\0';
    if (vips_image_get_typeof(image, VIPS_META_LOADER) != 0
        && vips_image_get_string(image, VIPS_META_LOADER, &name) == 0 && name != NULL) {
        g_strlcpy(loader, name, loader_size);
    }
    g_object_unref(image);
    return 0;
}

/// As `cvips_thumbnail_file`, but fills the `width` x `height` box and crops what overflows,
/// keeping the centre (Imgur's square `s` and `b` thumbnails). Never enlarges.
static inline int cvips_thumbnail_file_cropped(const char *path, int width, int height, const char *suffix,
                                               void **buffer, size_t *length) {
    VipsImage *thumb = NULL;
    if (vips_thumbnail(path, &thumb, width, "height", height, "size", VIPS_SIZE_DOWN,
                       "crop", VIPS_INTERESTING_CENTRE, NULL) != 0) {
        vips_error_clear();
        return -1;
    }
    int result = vips_image_write_to_buffer(thumb, suffix, buffer, length, NULL);
    g_object_unref(thumb);
    if (result != 0) vips_error_clear();
    return result;
}
