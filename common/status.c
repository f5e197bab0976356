#include "status.h"

const char *dg_status_name(int status)
{
    switch (status) {
    case DG_OK: return "OC_OK";
    case DG_ERR_INVALID: return "OC_ERR_INVALID";
    case DG_ERR_NOT_FOUND: return "OC_ERR_NOT_FOUND";
    case DG_ERR_DENIED: return "OC_ERR_DENIED";
    case DG_ERR_CONFLICT: return "OC_ERR_CONFLICT";
    case DG_ERR_IO: return "OC_ERR_IO";
    case DG_ERR_NOMEM: return "OC_ERR_NOMEM";
    case DG_ERR_UNSUPPORTED: return "OC_ERR_UNSUPPORTED";
    case DG_ERR_INTERNAL: return "OC_ERR_INTERNAL";
    }
    return "OC_UNKNOWN";
}
