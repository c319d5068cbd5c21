/* A minimal view of ONNX Runtime's C API for the nnp-ort oracle.
 *
 * No onnxruntime headers are packaged for Debian, and the prebuilt library we
 * test against (npm onnxruntime-node) ships none either.  The C API is one
 * struct of function pointers (OrtApi) returned by OrtGetApiBase()->GetApi();
 * ONNX Runtime only ever appends to it, so a member's position is stable
 * across releases.  We declare the struct as an array of pointers and name
 * the positions we use (counted from onnxruntime_c_api.h, first members
 * CreateStatus, GetErrorCode, GetErrorMessage, CreateEnv, ...).  nnp-ort
 * checks the numbering at start-up with a CreateStatus/GetErrorCode/
 * GetErrorMessage round trip. */
#pragma once

#include <stddef.h>
#include <stdint.h>

typedef struct OrtStatus OrtStatus;
typedef struct OrtEnv OrtEnv;
typedef struct OrtSession OrtSession;
typedef struct OrtSessionOptions OrtSessionOptions;
typedef struct OrtMemoryInfo OrtMemoryInfo;
typedef struct OrtValue OrtValue;
typedef struct OrtRunOptions OrtRunOptions;
typedef struct OrtTypeInfo OrtTypeInfo;
typedef struct OrtTensorTypeAndShapeInfo OrtTensorTypeAndShapeInfo;
typedef struct OrtAllocator OrtAllocator;

typedef void (*OrtFn) (void);

typedef struct {
  const OrtFn *(*GetApi) (uint32_t version); /* the OrtApi, as an array */
  const char *(*GetVersionString) (void);
} OrtApiBase;

typedef const OrtApiBase *(*OrtGetApiBaseFn) (void);

/* Any API version >= 1 has every member below. */
#define NNP_ORT_API_VERSION 13

/* Positions in struct OrtApi. */
enum {
  ORT_FN_CreateStatus = 0,
  ORT_FN_GetErrorCode = 1,
  ORT_FN_GetErrorMessage = 2,
  ORT_FN_CreateEnv = 3,
  ORT_FN_CreateSession = 7,
  ORT_FN_Run = 9,
  ORT_FN_CreateSessionOptions = 10,
  ORT_FN_SetOptimizedModelFilePath = 11,
  ORT_FN_EnableProfiling = 14,
  ORT_FN_SetSessionGraphOptimizationLevel = 23,
  ORT_FN_SetIntraOpNumThreads = 24,
  ORT_FN_SetInterOpNumThreads = 25,
  ORT_FN_SessionGetInputCount = 30,
  ORT_FN_SessionGetOutputCount = 31,
  ORT_FN_SessionGetInputTypeInfo = 33,
  ORT_FN_SessionGetInputName = 36,
  ORT_FN_SessionGetOutputName = 37,
  ORT_FN_CreateTensorWithDataAsOrtValue = 49,
  ORT_FN_GetTensorMutableData = 51,
  ORT_FN_CastTypeInfoToTensorInfo = 55,
  ORT_FN_GetTensorElementType = 60,
  ORT_FN_GetDimensionsCount = 61,
  ORT_FN_GetDimensions = 62,
  ORT_FN_GetTensorTypeAndShape = 65,
  ORT_FN_CreateCpuMemoryInfo = 69,
  ORT_FN_AllocatorFree = 76,
  ORT_FN_GetAllocatorWithDefaultOptions = 78,
  ORT_FN_ReleaseEnv = 92,
  ORT_FN_ReleaseStatus = 93,
  ORT_FN_ReleaseMemoryInfo = 94,
  ORT_FN_ReleaseSession = 95,
  ORT_FN_ReleaseValue = 96,
  ORT_FN_ReleaseTypeInfo = 98,
  ORT_FN_ReleaseTensorTypeAndShapeInfo = 99,
  ORT_FN_ReleaseSessionOptions = 100,
};

/* Enum values used (onnxruntime_c_api.h). */
#define ORT_LOGGING_LEVEL_WARNING 2
#define ORT_LOGGING_LEVEL_ERROR 3
#define ORT_DISABLE_ALL 0
#define ORT_ENABLE_ALL 99
#define ORT_ARENA_ALLOCATOR 1
#define ORT_MEM_TYPE_DEFAULT 0
#define ORT_FAIL 1

/* Signatures of the members used. */
typedef OrtStatus *(*OrtCreateStatusFn) (int code, const char *msg);
typedef int (*OrtGetErrorCodeFn) (const OrtStatus *status);
typedef const char *(*OrtGetErrorMessageFn) (const OrtStatus *status);
typedef OrtStatus *(*OrtCreateEnvFn) (int log_level, const char *logid, OrtEnv **out);
typedef OrtStatus *(*OrtCreateSessionFn) (const OrtEnv *env, const char *model_path,
                                          const OrtSessionOptions *options, OrtSession **out);
typedef OrtStatus *(*OrtRunFn) (OrtSession *session, const OrtRunOptions *run_options,
                                const char *const *input_names, const OrtValue *const *inputs,
                                size_t input_len, const char *const *output_names,
                                size_t output_names_len, OrtValue **outputs);
typedef OrtStatus *(*OrtCreateSessionOptionsFn) (OrtSessionOptions **options);
typedef OrtStatus *(*OrtSetIntFn) (OrtSessionOptions *options, int value);
/* EnableProfiling, SetOptimizedModelFilePath (a char path on Linux) */
typedef OrtStatus *(*OrtSetPathFn) (OrtSessionOptions *options, const char *path);
typedef OrtStatus *(*OrtSessionGetCountFn) (const OrtSession *session, size_t *out);
typedef OrtStatus *(*OrtSessionGetTypeInfoFn) (const OrtSession *session, size_t index,
                                               OrtTypeInfo **type_info);
typedef OrtStatus *(*OrtSessionGetNameFn) (const OrtSession *session, size_t index,
                                           OrtAllocator *allocator, char **value);
typedef OrtStatus *(*OrtCreateTensorWithDataAsOrtValueFn) (const OrtMemoryInfo *info, void *data,
                                                           size_t data_len, const int64_t *shape,
                                                           size_t shape_len, int type,
                                                           OrtValue **out);
typedef OrtStatus *(*OrtGetTensorMutableDataFn) (OrtValue *value, void **out);
typedef OrtStatus *(*OrtCastTypeInfoToTensorInfoFn) (const OrtTypeInfo *type_info,
                                                     const OrtTensorTypeAndShapeInfo **out);
typedef OrtStatus *(*OrtGetTensorElementTypeFn) (const OrtTensorTypeAndShapeInfo *info, int *out);
typedef OrtStatus *(*OrtGetDimensionsCountFn) (const OrtTensorTypeAndShapeInfo *info, size_t *out);
typedef OrtStatus *(*OrtGetDimensionsFn) (const OrtTensorTypeAndShapeInfo *info, int64_t *dims,
                                          size_t n);
typedef OrtStatus *(*OrtGetTensorTypeAndShapeFn) (const OrtValue *value,
                                                  OrtTensorTypeAndShapeInfo **out);
typedef OrtStatus *(*OrtCreateCpuMemoryInfoFn) (int type, int mem_type, OrtMemoryInfo **out);
typedef OrtStatus *(*OrtAllocatorFreeFn) (OrtAllocator *allocator, void *p);
typedef OrtStatus *(*OrtGetAllocatorWithDefaultOptionsFn) (OrtAllocator **out);
typedef void (*OrtReleaseFn) (void *object);
