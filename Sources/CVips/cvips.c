// See include/cvips.h for why libvips is loaded at run time. The prototypes below are
// libvips 8's public API (stable across 8.x); VipsImage is opaque here, and the enum values
// passed as varargs are those of vips/enumtypes: VIPS_ACCESS_SEQUENTIAL 1, VIPS_SIZE_DOWN 2,
// VIPS_INTERESTING_CENTRE 1.
#include "cvips.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
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
} vips;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char program_name[128] = "ferry";
static char load_error[256] = "";
static int load_status = -1;

#define VIPS_ACCESS_SEQUENTIAL 1
#define VIPS_SIZE_DOWN 2
#define VIPS_INTERESTING_CENTRE 1
#define VIPS_META_LOADER "vips-loader"

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
        resolve(handle, (void **)&vips.free, "g_free")) {
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
