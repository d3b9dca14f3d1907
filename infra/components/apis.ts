import * as gcp from '@pulumi/gcp';
import * as pulumi from '@pulumi/pulumi';
import { childOptions } from './child-options';

/** The Google APIs Herald's resources live in. */
export const REQUIRED_APIS = [
  'cloudresourcemanager.googleapis.com',
  'iam.googleapis.com',
  'cloudfunctions.googleapis.com',
  'run.googleapis.com',
  'cloudbuild.googleapis.com',
  'artifactregistry.googleapis.com',
  'storage.googleapis.com',
  'pubsub.googleapis.com',
  'firestore.googleapis.com',
  'cloudscheduler.googleapis.com',
  'secretmanager.googleapis.com',
  // The dashboard, alert policies and notification channels (herald:monitoring).
  'monitoring.googleapis.com',
] as const;

export interface ProjectApisArgs {
  project: string;
}

export class ProjectApis extends pulumi.ComponentResource {
  readonly services: gcp.projects.Service[];

  constructor(name: string, args: ProjectApisArgs, opts?: pulumi.ComponentResourceOptions) {
    super('herald:project:Apis', name, {}, opts);
    this.services = REQUIRED_APIS.map(
      (api) =>
        new gcp.projects.Service(
          `${name}-${api.split('.')[0]}`,
          // Other workloads in the project may use these APIs: tearing Herald down leaves them on.
          { project: args.project, service: api, disableOnDestroy: false, disableDependentServices: false },
          childOptions(this, opts),
        ),
    );
    this.registerOutputs({});
  }
}
