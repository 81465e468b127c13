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
