// Starts Swagger UI on /docs from the server's own files (no CDN, no inline script).
"use strict";

const root = document.getElementById("swagger-ui");
window.ui = SwaggerUIBundle({
  url: root.dataset.openapiUrl,
  dom_id: "#swagger-ui",
  deepLinking: true,
  displayOperationId: true,
  showExtensions: true,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
  layout: "BaseLayout",
});
