// See include/cvips.h for why libvips is loaded at run time. The prototypes below are
// libvips 8's public API (stable across 8.x); VipsImage is opaque here, and the enum values
// passed as varargs are those of vips/enumtypes: VIPS_ACCESS_SEQUENTIAL 1, VIPS_SIZE_DOWN 2,
// VIPS_INTERESTING_CENTRE 1.
#include "cvips.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct VipsImage VipsImage;

static struct {
    int (*init)(const char *argv0);
    VipsImage *(*image_new_from_file)(const char *name, ...);
    int (*thumbnail)(const char *filename, VipsImage **out, int width, ...);
    int (*image_write_to_buffer)(VipsImage *in, const char *suffix, void **buf, size_t *size, ...);
    int (*image_get_width)(const VipsImage *image);
    int (*image_get_height)(const VipsImage *image);
    int (*image_get_page_height)(VipsImage *image);
    int (*image_get_n_pages)(VipsImage *image);
    int (*image_get_orientation)(VipsImage *image);
    unsigned long (*image_get_typeof)(const VipsImage *image, const char *name);
    int (*image_get_string)(const VipsImage *image, const char *name, const char **out);
    const char *(*error_buffer)(void);
    void (*error_clear)(void);
    void (*object_unref)(void *object);
    void (*free)(void *memory);
    int (*colourspace)(VipsImage *in, VipsImage **out, int space, ...);
    int (*flatten)(VipsImage *in, VipsImage **out, ...);
    int (*cast)(VipsImage *in, VipsImage **out, int format, ...);
    int (*image_hasalpha)(VipsImage *image);
    int (*image_get_bands)(const VipsImage *image);
    void *(*image_write_to_memory)(VipsImage *in, size_t *size);
    int (*gravity)(VipsImage *in, VipsImage **out, int direction, int width, int height, ...);
    int (*text)(VipsImage **out, const char *text, ...);
    int (*invert)(VipsImage *in, VipsImage **out, ...);
    int (*bandjoin)(VipsImage **in, VipsImage **out, int n, ...);
    int (*join)(VipsImage *in1, VipsImage *in2, VipsImage **out, int direction, ...);
    int (*arrayjoin)(VipsImage **in, VipsImage **out, int n, ...);
    int (*image_write_to_file)(VipsImage *image, const char *name, ...);
} vips;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char program_name[128] = "ferry";
static char load_error[256] = "";
static int load_status = -1;

#define VIPS_ACCESS_SEQUENTIAL 1
#define VIPS_SIZE_DOWN 2
#define VIPS_INTERESTING_CENTRE 1
#define VIPS_META_LOADER "vips-loader"
#define VIPS_INTERPRETATION_sRGB 22
#define VIPS_FORMAT_UCHAR 0
#define VIPS_COMPASS_DIRECTION_CENTRE 0
#define VIPS_EXTEND_WHITE 4
#define VIPS_DIRECTION_VERTICAL 1

static int resolve(void *handle, void **slot, const char *name) {
    *slot = dlsym(handle, name);
    if (*slot == NULL) {
        snprintf(load_error, sizeof load_error, "libvips has no %s (libvips 8 is needed)", name);
        return -1;
    }
    return 0;
}

static void load(void) {
    // Debian's runtime package is libvips42; the unversioned name comes with libvips-dev.
    void *handle = dlopen("libvips.so.42", RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) handle = dlopen("libvips.so", RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        snprintf(load_error, sizeof load_error, "libvips is not installed (%s)", dlerror());
        return;
    }
    // dlsym on the handle also searches libvips' own dependencies (GObject, GLib).
    if (resolve(handle, (void **)&vips.init, "vips_init") ||
        resolve(handle, (void **)&vips.image_new_from_file, "vips_image_new_from_file") ||
        resolve(handle, (void **)&vips.thumbnail, "vips_thumbnail") ||
        resolve(handle, (void **)&vips.image_write_to_buffer, "vips_image_write_to_buffer") ||
        resolve(handle, (void **)&vips.image_get_width, "vips_image_get_width") ||
        resolve(handle, (void **)&vips.image_get_height, "vips_image_get_height") ||
        resolve(handle, (void **)&vips.image_get_page_height, "vips_image_get_page_height") ||
        resolve(handle, (void **)&vips.image_get_n_pages, "vips_image_get_n_pages") ||
        resolve(handle, (void **)&vips.image_get_orientation, "vips_image_get_orientation") ||
        resolve(handle, (void **)&vips.image_get_typeof, "vips_image_get_typeof") ||
        resolve(handle, (void **)&vips.image_get_string, "vips_image_get_string") ||
        resolve(handle, (void **)&vips.error_buffer, "vips_error_buffer") ||
        resolve(handle, (void **)&vips.error_clear, "vips_error_clear") ||
        resolve(handle, (void **)&vips.object_unref, "g_object_unref") ||
        resolve(handle, (void **)&vips.free, "g_free") ||
        resolve(handle, (void **)&vips.colourspace, "vips_colourspace") ||
        resolve(handle, (void **)&vips.flatten, "vips_flatten") ||
        resolve(handle, (void **)&vips.cast, "vips_cast") ||
        resolve(handle, (void **)&vips.image_hasalpha, "vips_image_hasalpha") ||
        resolve(handle, (void **)&vips.image_get_bands, "vips_image_get_bands") ||
        resolve(handle, (void **)&vips.image_write_to_memory, "vips_image_write_to_memory") ||
        resolve(handle, (void **)&vips.gravity, "vips_gravity") ||
        resolve(handle, (void **)&vips.text, "vips_text") ||
        resolve(handle, (void **)&vips.invert, "vips_invert") ||
        resolve(handle, (void **)&vips.bandjoin, "vips_bandjoin") ||
        resolve(handle, (void **)&vips.join, "vips_join") ||
        resolve(handle, (void **)&vips.arrayjoin, "vips_arrayjoin") ||
        resolve(handle, (void **)&vips.image_write_to_file, "vips_image_write_to_file")) {
        return;
    }
    if (vips.init(program_name) != 0) {
        snprintf(load_error, sizeof load_error, "libvips did not start: %s", vips.error_buffer());
        vips.error_clear();
        return;
    }
    load_status = 0;
}

int cvips_start_as(const char *program) {
    // The first caller names the process; libvips starts once whoever asks.
    static pthread_mutex_t naming = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&naming);
    if (program != NULL && strcmp(program_name, "ferry") == 0) {
        snprintf(program_name, sizeof program_name, "%s", program);
    }
    pthread_mutex_unlock(&naming);
    pthread_once(&load_once, load);
    return load_status;
}

int cvips_start(void) { return cvips_start_as("byteclub-server"); }

const char *cvips_load_error(void) { return load_status == 0 ? "" : load_error; }

int cvips_dimensions_file(const char *path, int *width, int *height) {
    if (load_status != 0) return -1;
    VipsImage *image = vips.image_new_from_file(path, NULL);
    if (image == NULL) { vips.error_clear(); return -1; }
    *width = vips.image_get_width(image);
    *height = vips.image_get_height(image);
    vips.object_unref(image);
    return 0;
}

int cvips_header_file(const char *path, int *width, int *height, int *orientation, int *pages,
                      char *loader, size_t loader_size, char *error, size_t error_size) {
    if (load_status != 0) {
        snprintf(error, error_size, "%s", load_error);
        return -1;
    }
    VipsImage *image = vips.image_new_from_file(path, "access", VIPS_ACCESS_SEQUENTIAL, NULL);
    if (image == NULL) {
        snprintf(error, error_size, "%s", vips.error_buffer());
        vips.error_clear();
        return -1;
    }
    *width = vips.image_get_width(image);
    *height = vips.image_get_page_height(image);
    *orientation = vips.image_get_orientation(image);
    *pages = vips.image_get_n_pages(image);
    const char *name = NULL;
    if (loader_size > 0) loader[0] = '\0';
    if (vips.image_get_typeof(image, VIPS_META_LOADER) != 0
        && vips.image_get_string(image, VIPS_META_LOADER, &name) == 0 && name != NULL) {
        snprintf(loader, loader_size, "%s", name);
    }
    vips.object_unref(image);
    return 0;
}

static int encode(VipsImage *thumb, const char *suffix, void **buffer, size_t *length) {
    int result = vips.image_write_to_buffer(thumb, suffix, buffer, length, NULL);
    vips.object_unref(thumb);
    if (result != 0) vips.error_clear();
    return result;
}

int cvips_thumbnail_file(const char *path, int width, int height, const char *suffix,
                         void **buffer, size_t *length) {
    if (load_status != 0) return -1;
    VipsImage *thumb = NULL;
    if (vips.thumbnail(path, &thumb, width, "height", height, "size", VIPS_SIZE_DOWN, NULL) != 0) {
        vips.error_clear();
        return -1;
    }
    return encode(thumb, suffix, buffer, length);
}

int cvips_thumbnail_file_cropped(const char *path, int width, int height, const char *suffix,
                                 void **buffer, size_t *length) {
    if (load_status != 0) return -1;
    VipsImage *thumb = NULL;
    if (vips.thumbnail(path, &thumb, width, "height", height, "size", VIPS_SIZE_DOWN,
                       "crop", VIPS_INTERESTING_CENTRE, NULL) != 0) {
        vips.error_clear();
        return -1;
    }
    return encode(thumb, suffix, buffer, length);
}

void cvips_free(void *buffer) {
    if (buffer != NULL && vips.free != NULL) vips.free(buffer);
}

// Replaces *image by step's result, dropping the old one; on failure *image is dropped too.
#define STEP(image, call) do { VipsImage *next_ = NULL; int failed_ = (call); vips.object_unref(image); \
    if (failed_) { image = NULL; } else { image = next_; } } while (0)

// sRGB, no alpha (flattened on black), 8 bits per band: what a terminal or a JPEG takes.
static VipsImage *rgb8(VipsImage *image) {
    if (image != NULL) STEP(image, vips.colourspace(image, &next_, VIPS_INTERPRETATION_sRGB, NULL));
    if (image != NULL && vips.image_hasalpha(image)) STEP(image, vips.flatten(image, &next_, NULL));
    if (image != NULL) STEP(image, vips.cast(image, &next_, VIPS_FORMAT_UCHAR, NULL));
    return image;
}

static void copy_error(char *error, size_t error_size) {
    if (error_size > 0) snprintf(error, error_size, "%s", load_status == 0 ? vips.error_buffer() : load_error);
    if (load_status == 0) vips.error_clear();
}

int cvips_rgb_file(const char *path, int width, int height, void **pixels, int *out_width, int *out_height) {
    if (load_status != 0) return -1;
    VipsImage *image = NULL;
    if (vips.thumbnail(path, &image, width, "height", height, "size", VIPS_SIZE_DOWN, NULL) != 0) {
        vips.error_clear();
        return -1;
    }
    image = rgb8(image);
    if (image == NULL || vips.image_get_bands(image) != 3) {
        if (image != NULL) vips.object_unref(image);
        vips.error_clear();
        return -1;
    }
    size_t size = 0;
    *out_width = vips.image_get_width(image);
    *out_height = vips.image_get_height(image);
    *pixels = vips.image_write_to_memory(image, &size);
    vips.object_unref(image);
    if (*pixels == NULL || size != (size_t)(*out_width) * (size_t)(*out_height) * 3) {
        vips.error_clear();
        return -1;
    }
    return 0;
}

// One tile: the picture fitted into cell x cell on white, its label under it.
static VipsImage *tile(const char *path, const char *label, int cell) {
    VipsImage *picture = NULL;
    if (vips.thumbnail(path, &picture, cell, "height", cell, "size", VIPS_SIZE_DOWN, NULL) != 0) return NULL;
    picture = rgb8(picture);
    if (picture != NULL) STEP(picture, vips.gravity(picture, &next_, VIPS_COMPASS_DIRECTION_CENTRE, cell + 16, cell + 16, "extend", VIPS_EXTEND_WHITE, NULL));
    if (picture == NULL) return NULL;
    VipsImage *text = NULL;
    if (vips.text(&text, label, "width", cell, "dpi", 96, NULL) != 0) { vips.object_unref(picture); return NULL; }
    STEP(text, vips.invert(text, &next_, NULL));  // black text on white
    if (text != NULL) {
        VipsImage *bands[3] = {text, text, text};
        VipsImage *joined = NULL;
        int failed = vips.bandjoin(bands, &joined, 3, NULL);
        vips.object_unref(text);
        text = failed ? NULL : joined;
    }
    if (text != NULL) STEP(text, vips.cast(text, &next_, VIPS_FORMAT_UCHAR, NULL));
    if (text != NULL) STEP(text, vips.gravity(text, &next_, VIPS_COMPASS_DIRECTION_CENTRE, cell + 16, 28, "extend", VIPS_EXTEND_WHITE, NULL));
    if (text == NULL) { vips.object_unref(picture); return NULL; }
    VipsImage *out = NULL;
    int failed = vips.join(picture, text, &out, VIPS_DIRECTION_VERTICAL, NULL);
    vips.object_unref(picture);
    vips.object_unref(text);
    return failed ? NULL : out;
}

int cvips_contact_sheet(const char *const *paths, const char *const *labels, int count, int cell, int across,
                        const char *output, char *error, size_t error_size) {
    if (load_status != 0 || count <= 0) { copy_error(error, error_size); return -1; }
    VipsImage **tiles = calloc((size_t)count, sizeof *tiles);
    if (tiles == NULL) { snprintf(error, error_size, "out of memory"); return -1; }
    int made = 0, result = -1;
    for (; made < count; made++) {
        tiles[made] = tile(paths[made], labels[made], cell);
        if (tiles[made] == NULL) {
            char reason[200];
            copy_error(reason, sizeof reason);
            snprintf(error, error_size, "%s: %s", paths[made], reason);
            goto done;
        }
    }
    VipsImage *sheet = NULL;
    if (vips.arrayjoin(tiles, &sheet, count, "across", across, NULL) != 0) { copy_error(error, error_size); goto done; }
    result = vips.image_write_to_file(sheet, output, NULL);
    if (result != 0) copy_error(error, error_size);
    vips.object_unref(sheet);
done:
    for (int i = 0; i < made; i++) vips.object_unref(tiles[i]);
    free(tiles);
    return result;
}
